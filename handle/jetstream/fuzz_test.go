package jetstream

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
)

// FuzzRowSeq: the seq rowSeq reads from a message's first bytes is the
// one the row decoder finds, and no input makes it panic.
func FuzzRowSeq(f *testing.F) {
	for _, seed := range []string{
		`{"seq":0,"type":"x","time":0,"data":null}` + "\n",
		`{"seq":12,"type":"assistant/chunk","time":5,"n":2,"times":[5,6],"datas":[{"text":"a"},{"text":"b"}]}` + "\n",
		`{"seq":-1,"type":"x"}`, `{"seq":99999999999999999999,`, `{"seq":`, `{"seq":1`, `ht":"x"}` + "\n", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, ok := sealing.RowSeq(b)
		if !ok {
			return
		}
		require.GreaterOrEqual(t, seq, int64(0))
		line, _, _ := bytes.Cut(b, []byte("\n"))
		if evs, err := eventlog.DecodeRow(line); err == nil {
			require.Equal(t, evs[0].Seq, seq)
		}
	})
}
