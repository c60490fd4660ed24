package projection_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/projection"
)

// A projection's state does not point into the data of the events it was
// given: a caller may reuse their bytes once Apply returns. Every raw
// value a projection keeps (a call's args, a result's output, a memory
// value and its metadata, a provider's state, a plan) is overwritten
// after Apply, and the state must not change.
func TestStateOwnsItsBytes(t *testing.T) {
	evs := numbered(
		ev("step/start", `{}`),
		ev("assistant/message", `{"text":"calling"}`),
		ev("tool/call", `{"id":"c1","name":"read","args":{"path":"a.go"},"effect":"read"}`),
		ev("tool/call", `{"id":"c2","name":"read","args":{"path":"b.go"}}`),
		ev("tool/result", `{"id":"c1","output":{"lines":["x","y"]}}`),
		ev("memory/set", `{"key":"k","value":{"v":1},"metadata":{"m":2}}`),
		ev("provider/state", `{"provider":"p","state":{"cursor":"abc"}}`),
		ev("plan/set", `{"plan":["step one","step two"]}`),
	)
	for _, bp := range []struct {
		name string
		new  func() projection.Projection
	}{
		{"agent", func() projection.Projection { return projection.NewAgent() }},
		{"transcript", func() projection.Projection { return projection.NewTranscript() }},
	} {
		t.Run(bp.name, func(t *testing.T) {
			p := bp.new()
			for _, e := range evs {
				e.Data = append([]byte(nil), e.Data...) // the caller's buffer
				p.Apply(e)
				for i := range e.Data {
					e.Data[i] = ' ' // reused for something else
				}
			}
			want := bp.new()
			apply(want, evs)
			require.Equal(t, marshal(t, want), marshal(t, p))
		})
	}
}
