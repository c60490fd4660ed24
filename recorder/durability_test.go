package recorder_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/recorder"
)

// call is a Recorder method in durabilityCalls: the seq it recorded last
// and whether it is durable when it returns.
type call struct {
	method  string
	do      func(t *testing.T, rec *recorder.Recorder) int64
	durable bool
}

// durabilityCalls is every method of a Recorder that records, in an order
// that makes each call valid, with what its doc says of its durability.
func durabilityCalls(store recorder.Forker) []call {
	s := func(t *testing.T) func(int64, error) int64 { return mustSeq(t) }
	return []call{
		{"BeginTurn", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.BeginTurn(ctx, nil)) }, false},
		{"UserMessage", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.UserMessage(ctx, "hi", "")) }, false},
		{"BeginStep", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.BeginStep(ctx)) }, true},
		{"Reasoning", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.Reasoning(ctx, "hm", "")) }, false},
		{"Chunk", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.Chunk(ctx, "He")) }, false},
		{"AssistantMessage", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.AssistantMessage(ctx, "Hello", "")) }, false},
		{"ToolCall", func(t *testing.T, r *recorder.Recorder) int64 {
			return s(t)(r.ToolCall(ctx, recorder.Call{ID: "c0", Name: "ls", Effect: "read"}))
		}, true},
		{"Response", func(t *testing.T, r *recorder.Recorder) int64 {
			s(t)(r.BeginStep(ctx))
			s(t)(r.Chunk(ctx, "He"))
			return s(t)(r.Response(ctx, recorder.Response{Calls: []recorder.Call{{ID: "c1", Name: "ls", Effect: "read"}}, StopReason: "tool_use"}))
		}, true},
		{"ToolApproval", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.ToolApproval(ctx, "c1", "approved", "")) }, true},
		{"ToolResult", func(t *testing.T, r *recorder.Recorder) int64 {
			return s(t)(r.ToolResult(ctx, recorder.Result{ID: "c1", Output: "a"}))
		}, false},
		{"Usage", func(t *testing.T, r *recorder.Recorder) int64 {
			return s(t)(r.Usage(ctx, recorder.Usage{InputTokens: 1}))
		}, false},
		{"MemorySet", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.MemorySet(ctx, "k", "v", nil)) }, false},
		{"MemoryDelete", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.MemoryDelete(ctx, "k")) }, false},
		{"SetPlan", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.SetPlan(ctx, "p")) }, false},
		{"SwitchSlot", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.SwitchSlot(ctx, "s")) }, false},
		{"ProviderState", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.ProviderState(ctx, "p", 1)) }, false},
		{"Compacted", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.Compacted(ctx, "sum")) }, false},
		{"Flush", func(t *testing.T, r *recorder.Recorder) int64 {
			require.NoError(t, r.Flush(ctx))
			return r.Handle().Seq()
		}, true},
		{"EndStep", func(t *testing.T, r *recorder.Recorder) int64 { return s(t)(r.EndStep(ctx)) }, true},
		{"EndTurn", func(t *testing.T, r *recorder.Recorder) int64 {
			s(t)(r.EndTurn(ctx, recorder.Completed, ""))
			return r.Handle().Seq() // its checkpoint
		}, true},
		{"Checkpoint", func(t *testing.T, r *recorder.Recorder) int64 {
			info, err := r.Checkpoint(ctx, "mine")
			require.NoError(t, err)
			return info.Seq
		}, true},
		{"RollbackTo", func(t *testing.T, r *recorder.Recorder) int64 {
			s(t)(r.BeginTurn(ctx, nil))
			return s(t)(r.RollbackTo(ctx, "mine"))
		}, true},
		{"Rollback", func(t *testing.T, r *recorder.Recorder) int64 {
			s(t)(r.BeginTurn(ctx, nil))
			return s(t)(r.Rollback(ctx, 2))
		}, true},
		{"Resume", func(t *testing.T, r *recorder.Recorder) int64 {
			s(t)(r.BeginTurn(ctx, nil))
			s(t)(r.BeginStep(ctx))
			s(t)(r.Chunk(ctx, "cut"))
			res, err := r.Resume(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, res.Appended)
			return res.Appended[len(res.Appended)-1]
		}, true},
		{"CloseTurn", func(t *testing.T, r *recorder.Recorder) int64 {
			res, err := r.CloseTurn(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, res.Appended)
			return res.Appended[len(res.Appended)-1]
		}, true},
		{"Fork", func(t *testing.T, r *recorder.Recorder) int64 {
			last := s(t)(r.BeginTurn(ctx, nil))
			f, err := r.Fork(ctx, store, last)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return last
		}, true},
		{"Close", func(t *testing.T, r *recorder.Recorder) int64 {
			last := s(t)(r.UserMessage(ctx, "bye", ""))
			require.NoError(t, r.Close())
			return last
		}, true},
	}
}

// TestDurableOnReturn: each method is durable when it returns exactly
// when its doc says so, and DurableSeq says how far the log is durable.
func TestDurableOnReturn(t *testing.T) {
	h, store := newHandle(t)
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	for _, c := range durabilityCalls(store) {
		seq := c.do(t, rec)
		require.Equal(t, h.DurableSeq(), rec.DurableSeq(), c.method)
		if c.durable {
			require.GreaterOrEqual(t, rec.DurableSeq(), seq, "%s is durable when it returns", c.method)
		} else {
			require.Less(t, rec.DurableSeq(), seq, "%s is not durable when it returns", c.method)
		}
	}
}

// TestDurabilityIsDocumented: the doc of every method of a Recorder that
// records says whether it is durable when it returns, as it behaves (the
// table TestDurableOnReturn checks); a new method without it fails here.
func TestDurabilityIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	require.NoError(t, err)
	p := doc.New(pkgs["recorder"], "github.com/sessionlog/sessionlog/recorder", 0)
	var methods []*doc.Func
	for _, typ := range p.Types {
		if typ.Name == "Recorder" {
			methods = typ.Methods
		}
	}
	require.NotEmpty(t, methods)
	calls := durabilityCalls(nil)
	for _, m := range methods {
		if !ast.IsExported(m.Name) || slices.Contains([]string{"State", "Handle", "DurableSeq"}, m.Name) {
			continue // they record nothing
		}
		i := slices.IndexFunc(calls, func(c call) bool { return c.method == m.Name })
		require.GreaterOrEqual(t, i, 0, "Recorder.%s records: add it to durabilityCalls", m.Name)
		text := strings.Join(strings.Fields(m.Doc), " ")
		not, is := strings.Contains(text, "Not durable when it returns"), strings.Contains(text, "Durable when it returns")
		require.True(t, not != is, "Recorder.%s: its doc says \"Durable when it returns\" or \"Not durable when it returns\", once: %q", m.Name, text)
		require.Equal(t, calls[i].durable, is, "Recorder.%s: the doc says otherwise than the method does", m.Name)
	}
}
