package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/recorder"
)

// t0 is the createdAt of the first fixture (2025-11-29T21:00:00Z); each
// next one is an hour later.
const t0 = 1764450000000

// The fixtures' session IDs: constant ULIDs, so regenerating changes
// nothing.
const (
	idVocabulary = "01KB0000000000000000000001"
	idPacked     = "01KB0000000000000000000002"
	idDegraded   = "01KB0000000000000000000003"
	idRollback   = "01KB0000000000000000000004"
	idNested     = "01KB0000000000000000000005"
	idParent     = "01KB0000000000000000000006"
	idFork       = "01KB0000000000000000000007"
	idChild      = "01KB0000000000000000000008"
	idResumed    = "01KB0000000000000000000009"
	idEmpty      = "01KB000000000000000000000A"
	idStreamed   = "01KB000000000000000000000B"
)

// fixture is one session of the corpus.
type fixture struct {
	// file is its name in the corpus folder. A session other fixtures
	// fork from keeps its store name, <ID>.jsonl, so that a fork finds
	// it by ID in the same folder.
	file     string
	id       string
	encoding string
	about    string
	// label is the session's "fixture" label; by default file without its
	// extension.
	label string
	// packTypes, when not nil, replaces the default packed types.
	packTypes []string
	// create makes the session in the store (nil: a plain Create).
	create func(ctx context.Context, st *file.Store, opts ...handle.Option) (handle.Handle, error)
	// write appends its events.
	write func(s *script) error
}

// corpus lists the fixtures in the order they are written (a parent before
// its fork and child).
var corpus = []fixture{
	{
		file: "vocabulary.jsonl", id: idVocabulary, encoding: handle.EncodingRaw,
		about: "every type of the agent vocabulary (docs/format.md §8) in two turns: reasoning, a packed chunk run, tool calls with approvals (approved, denied), a result replaced in place, usage by model, memory set/update/delete, provider state, slots, plan, compaction, a paused stop, an unknown type",
		write: writeVocabulary,
	},
	{
		file: "packed.jsonl.zst", id: idPacked, encoding: handle.EncodingZstd,
		packTypes: []string{"assistant/chunk", "assistant/reasoning"},
		about:     "zstd, several frames (one per flush); long packed runs of assistant/chunk and of assistant/reasoning (a non-default packed type), each event with its own time",
		write:     writePacked,
	},
	{
		file: "degraded.jsonl", id: idDegraded, encoding: handle.EncodingRaw,
		about: "a known type with the wrong shape for each kind of check (wrong JSON type, missing key, bad decision, unknown or duplicate call id, non-object data): recorded as degraded, lifecycle types still taking effect",
		write: writeDegraded,
	},
	{
		file: "rollback.jsonl", id: idRollback, encoding: handle.EncodingRaw,
		about: "checkpoints (one with the agent/v1 state digest, one labelled, one bare) and a rollback to a labelled checkpoint abandoning a failed turn",
		write: writeRollback,
	},
	{
		file: "nested-rollbacks.jsonl.zst", id: idNested, encoding: handle.EncodingZstd,
		about: "zstd; rollbacks into an abandoned branch, to a rollback event, and to a seq whose state was itself reached through rollbacks; a checkpoint on an abandoned branch",
		write: writeNested,
	},
	{
		file: idParent + ".jsonl", id: idParent, encoding: handle.EncodingRaw, label: "parent",
		about: "the parent of fork.jsonl.zst and child.jsonl (named by its ID so the fork finds it): a delegating tool call that spawned the child, then the branch the fork leaves",
		write: writeParent,
	},
	{
		file: "child.jsonl", id: idChild, encoding: handle.EncodingRaw,
		about: "a child session spawned by the parent's delegate call (parent mode child, with the call id): nothing inherited, rows from seq 0",
		create: func(ctx context.Context, st *file.Store, opts ...handle.Option) (handle.Handle, error) {
			opts = append(opts, handle.WithParent(eventlog.Parent{ID: idParent, Seq: parentDelegateSeq, Mode: eventlog.ModeChild, Call: "d1"}))
			return st.Create(ctx, opts...)
		},
		write: writeChild,
	},
	{
		file: "fork.jsonl.zst", id: idFork, encoding: handle.EncodingZstd,
		about: "zstd fork of the raw parent at the question it asks: inherits seqs 0..9 and answers otherwise",
		create: func(ctx context.Context, st *file.Store, opts ...handle.Option) (handle.Handle, error) {
			return st.Fork(ctx, idParent, parentForkSeq, opts...)
		},
		write: writeFork,
	},
	{
		file: "resumed-crash.jsonl", id: idResumed, encoding: handle.EncodingRaw,
		about: "a turn cut by a crash (open step, three calls without results, a torn tail) closed by recorder.CloseTurn: synthetic results (read: safe to retry; write and unknown: outcome unknown), step/end, turn/end interrupted; then a new turn",
		write: writeResumed,
	},
	{
		file: "empty.jsonl", id: idEmpty, encoding: handle.EncodingRaw,
		about: "a header and no event",
		write: func(*script) error { return nil },
	},
	{
		file: "streamed.jsonl", id: idStreamed, encoding: handle.EncodingRaw,
		about: "streamed text as a writer other than the recorder leaves it (docs/format.md §8): a step of chunks then a tool call, a step of chunks then its end, a step whose chunks an assistant message replaces, and a last step cut mid-stream (its text partial)",
		write: writeStreamed,
	},
}

// written is a fixture as written into the corpus folder.
type written struct {
	fixture
	size   int64 // bytes
	events int64 // of its logical log (a fork's inherited events included)
}

// generate writes every fixture and README.md into dir, replacing the
// session files there, and returns what it wrote.
func generate(ctx context.Context, dir string) ([]written, error) {
	work, err := os.MkdirTemp("", "gencorpus-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	paths := make([]string, len(corpus))
	for i, f := range corpus {
		if paths[i], err = build(ctx, work, i, f); err != nil {
			return nil, fmt.Errorf("%s: %w", f.file, err)
		}
	}
	if err := clean(dir); err != nil {
		return nil, err
	}
	out := make([]written, len(corpus))
	for i, f := range corpus {
		data, err := os.ReadFile(paths[i])
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, f.file), data, 0o644); err != nil {
			return nil, err
		}
		out[i] = written{fixture: f, size: int64(len(data))}
	}
	// Read back through the library, as replaytest will: every fixture
	// opens, forks find their parents.
	st := file.New(afero.NewOsFs(), dir)
	for i := range out {
		if out[i].events, err = countEvents(ctx, st, filepath.Join(dir, out[i].file)); err != nil {
			return nil, fmt.Errorf("%s: reading it back: %w", out[i].file, err)
		}
	}
	return out, os.WriteFile(filepath.Join(dir, "README.md"), readme(out), 0o644)
}

func countEvents(ctx context.Context, st *file.Store, path string) (int64, error) {
	h, err := st.OpenPath(ctx, path)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	var n int64
	for _, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// build writes fixture i into a store in work and returns its file.
func build(ctx context.Context, work string, i int, f fixture) (string, error) {
	createdAt := time.UnixMilli(t0 + int64(i)*int64(time.Hour/time.Millisecond))
	opts := []handle.Option{func(c *handle.Config) { c.Now = func() time.Time { return createdAt } }}
	if f.packTypes != nil {
		opts = append(opts, func(c *handle.Config) { c.PackTypes = append([]string{}, f.packTypes...) })
	}
	st := file.New(afero.NewOsFs(), work, opts...)
	create := f.create
	if create == nil {
		create = func(ctx context.Context, st *file.Store, opts ...handle.Option) (handle.Handle, error) {
			return st.Create(ctx, opts...)
		}
	}
	name := f.label
	if name == "" {
		name = strings.TrimSuffix(strings.TrimSuffix(f.file, ".zst"), ".jsonl")
	}
	h, err := create(ctx, st, handle.WithID(f.id), handle.WithEncoding(f.encoding),
		handle.WithLabels(map[string]string{"fixture": name, "agent": "gencorpus"}))
	if err != nil {
		return "", err
	}
	s := &script{ctx: ctx, h: h, t: createdAt.UnixMilli() + 1000}
	if err := f.write(s); err != nil {
		s.err = err
	}
	path := h.Path()
	return path, s.close()
}

// clean removes the session files and README of dir.
func clean(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".jsonl") || strings.HasSuffix(n, ".jsonl.zst") || n == "README.md" {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeVocabulary(s *script) error {
	s.add(
		ev{"slot/switch", obj("slot", "main")},
		ev{"memory/set", obj("key", "lang", "value", "go", "metadata", map[string]string{"source": "user"})},
		ev{"provider/state", obj("provider", "anthropic", "state", map[string]string{"cacheKey": "k1"})},
		ev{"turn/start", obj("input", "fix the failing test")},
		ev{"user/message", text("The test in a_test.go fails. Fix it.")},
		ev{"step/start", "{}"},
		ev{"assistant/reasoning", obj("text", "Read the file before editing it.", "signature", "sig-1")},
	)
	s.chunks("I'll ", "read ", "a.go ", "first.")
	s.add(
		ev{"assistant/message", text("I'll read a.go first.")},
		ev{"tool/call", obj("id", "c1", "name", "read_file", "args", map[string]string{"path": "a.go"}, "effect", "read")},
		ev{"tool/approval", obj("id", "c1", "decision", "approved", "by", "policy")},
		ev{"tool/result", obj("id", "c1", "output", map[string]string{"content": "package a\n\nfunc Sum(a, b int) int { return a - b }\n"})},
		ev{"usage", obj("inputTokens", 1200, "outputTokens", 85, "cachedTokens", 1000, "costMicros", 4200, "model", "model-a")},
		ev{"step/end", "{}"},
		ev{"step/start", "{}"},
		ev{"plan/set", obj("plan", []string{"fix Sum", "run the tests"})},
		ev{"assistant/message", obj("text", "Sum subtracts; fixing it.", "slot", "main")},
		ev{"tool/call", obj("id", "c2", "name", "write_file", "args", map[string]string{"path": "a.go", "content": "…a + b…"}, "effect", "write")},
		ev{"tool/approval", obj("id", "c2", "decision", "denied", "by", "user")},
		ev{"tool/result", obj("id", "c2", "error", "denied by the user")},
		ev{"tool/call", obj("id", "c3", "name", "run_tests", "args", map[string]any{})},
		ev{"tool/result", obj("id", "c3", "output", "FAIL a_test.go:7")},
		ev{"provider/state", obj("provider", "anthropic", "state", map[string]string{"cacheKey": "k2"})},
		ev{"provider/state", obj("provider", "local", "state", nil)},
		ev{"tool/result", obj("id", "c3", "output", "ok (rerun)")},
		ev{"usage", obj("inputTokens", 1500, "outputTokens", 40, "model", "model-b")},
		ev{"memory/set", obj("key", "lang", "value", "go1.26")},
		ev{"step/end", "{}"},
		ev{"custom/metrics", obj("latencyMs", 840)},
		ev{"turn/end", obj("kind", "completed")},
	)
	s.flush()
	s.add(
		ev{"turn/start", ""},
		ev{"slot/switch", obj("slot", "review")},
		ev{"user/message", obj("text", "Summarise what happened.", "slot", "side")},
		ev{"memory/delete", obj("key", "lang")},
		ev{"context/compacted", obj("summary", "The user asked to fix Sum in a.go; the write was denied; the tests pass on a rerun.")},
		ev{"step/start", "{}"},
		ev{"assistant/message", text("Sum is unchanged: the write was denied. The tests pass on a rerun.")},
		ev{"usage", obj("inputTokens", 300, "outputTokens", 20)},
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "paused", "reason", "waiting for review")},
	)
	return nil
}

func writePacked(s *script) error {
	s.add(
		ev{"turn/start", ""},
		ev{"user/message", text("Write a haiku about append-only logs.")},
		ev{"step/start", "{}"},
	)
	s.flush()
	s.run("assistant/reasoning", "A haiku: ", "five, seven, ", "five syllables. ", "Logs grow, ", "never shrink.")
	s.chunks("Lines ", "only ", "grow ", "long—\n", "each ", "event ", "set ", "down ", "in ", "ink,\n",
		"fsync ", "keeps ", "the ", "past.")
	s.add(ev{"assistant/reasoning", text("Check the count: 5-7-5.")})
	s.add(ev{"assistant/message", text("Lines only grow long—\neach event set down in ink,\nfsync keeps the past.")},
		ev{"usage", obj("inputTokens", 40, "outputTokens", 22, "model", "model-a")},
		ev{"step/end", "{}"},
	)
	s.flush()
	s.add(ev{"step/start", "{}"})
	s.chunks("Want ", "another?")
	s.add(ev{"assistant/message", text("Want another?")}, ev{"step/end", "{}"}, ev{"turn/end", obj("kind", "completed")})
	s.flush()
	return nil
}

func writeDegraded(s *script) error {
	s.add(
		ev{"turn/start", `"not an object"`},
		ev{"user/message", obj("text", 42)},
		ev{"step/start", "null"},
		ev{"assistant/message", `"just a string"`},
		ev{"assistant/reasoning", obj("signature", "sig")},
		ev{"tool/call", obj("name", "read_file", "args", map[string]any{})},
		ev{"tool/call", obj("id", "k1", "name", "read_file", "args", map[string]string{"path": "x"}, "effect", "read")},
		ev{"tool/call", obj("id", "k1", "name", "read_file", "args", map[string]string{"path": "y"})},
		ev{"tool/approval", obj("id", "k1", "decision", "maybe")},
		ev{"tool/result", obj("id", "ghost", "output", "?")},
		ev{"tool/result", obj("id", "k1", "output", "ok", "error", 7)},
		ev{"usage", obj("inputTokens", "many", "outputTokens", 1)},
		ev{"memory/set", obj("key", "k")},
		ev{"memory/delete", obj("key", 5)},
		ev{"provider/state", obj("provider", "p")},
		ev{"slot/switch", obj("slot", nil)},
		ev{"context/compacted", obj("summary", []string{"x"})},
		ev{"plan/set", "{}"},
		ev{"step/end", "[]"},
		ev{"vendor/custom", "42"},
		ev{"turn/end", obj("reason", "no kind given")},
	)
	return nil
}

func writeRollback(s *script) error {
	s.add(
		ev{"turn/start", ""},
		ev{"user/message", text("Rename Foo to Bar everywhere.")},
		ev{"step/start", "{}"},
		ev{"assistant/message", text("Before renaming, I'll take a checkpoint.")},
		ev{"usage", obj("inputTokens", 100, "outputTokens", 10)},
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "completed")},
	)
	s.checkpoint("before-rename", true)
	s.add(
		ev{"turn/start", ""},
		ev{"user/message", text("Go ahead.")},
		ev{"step/start", "{}"},
		ev{"tool/call", obj("id", "w1", "name", "rename_symbol", "args", map[string]string{"from": "Foo", "to": "Bar"}, "effect", "write")},
		ev{"tool/approval", obj("id", "w1", "decision", "approved")},
		ev{"tool/result", obj("id", "w1", "error", "build failed: Bar redeclared in pkg/b")},
		ev{"memory/set", obj("key", "attempt", "value", 1)},
		ev{"usage", obj("inputTokens", 400, "outputTokens", 60)},
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "failed", "reason", "the build is broken")},
	)
	s.flush()
	s.rollbackTo("before-rename", "the rename broke the build")
	s.add(
		ev{"turn/start", ""},
		ev{"user/message", text("Rename it in pkg/a only.")},
		ev{"step/start", "{}"},
		ev{"assistant/message", text("Renamed Foo to Bar in pkg/a.")},
		ev{"usage", obj("inputTokens", 150, "outputTokens", 12)},
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "completed")},
	)
	s.checkpoint("", false)
	return nil
}

func writeNested(s *script) error {
	turn := func(user, answer string) {
		s.add(ev{"turn/start", ""}, ev{"user/message", text(user)}, ev{"step/start", "{}"},
			ev{"assistant/message", text(answer)}, ev{"step/end", "{}"}, ev{"turn/end", obj("kind", "completed")})
	}
	turn("A", "answer to A")                                   // 0..5
	s.checkpoint("c1", false)                                  // 6
	s.add(ev{"turn/start", ""}, ev{"user/message", text("B")}, // 7, 8
		ev{"step/start", "{}"}, ev{"assistant/message", text("first answer to B")}, // 9, 10
		ev{"memory/set", obj("key", "branch", "value", "B")}) // 11
	branchB := s.seq()
	s.add(ev{"step/end", "{}"}, ev{"turn/end", obj("kind", "completed")}) // 12, 13
	s.flush()
	s.rollback(6, "drop B")  // 14: back to the state after A
	firstRollback := s.seq() //
	turn("C", "answer to C") // 15..20
	s.checkpoint("c2", false)
	s.rollback(branchB, "B was right after all; resume it mid-step") // into the abandoned branch
	s.add(ev{"assistant/message", text("second answer to B")}, ev{"step/end", "{}"}, ev{"turn/end", obj("kind", "completed")})
	endB := s.seq()
	s.flush()
	s.rollback(firstRollback, "start over from A") // to a rollback event: the state after A
	s.add(ev{"turn/start", ""}, ev{"user/message", text("D")}, ev{"step/start", "{}"},
		ev{"plan/set", obj("plan", "try D")}, ev{"step/end", "{}"}, ev{"turn/end", obj("kind", "cancelled")})
	s.flush()
	s.rollback(endB, "D was a dead end; back to the end of B") // behind two rollbacks
	s.checkpoint("end", false)
	return nil
}

// The parent's seqs that its fork and child refer to.
const (
	parentDelegateSeq = 4 // the delegate tool/call that spawned the child
	parentForkSeq     = 9 // the assistant's question, where the fork leaves
)

func writeParent(s *script) error {
	s.add(
		ev{"turn/start", ""}, // 0
		ev{"user/message", text("Refactor the parser and update its docs.")}, // 1
		ev{"step/start", "{}"}, // 2
		ev{"assistant/message", text("I'll hand the docs to a helper.")},                                                                    // 3
		ev{"tool/call", obj("id", "d1", "name", "delegate", "args", map[string]string{"task": "update docs/parser.md"}, "effect", "write")}, // 4
	)
	s.flush()
	s.add(
		ev{"tool/result", obj("id", "d1", "output", map[string]string{"session": idChild, "summary": "docs/parser.md updated"})}, // 5
		ev{"usage", obj("inputTokens", 900, "outputTokens", 70, "model", "model-a")},                                             // 6
		ev{"step/end", "{}"},   // 7
		ev{"step/start", "{}"}, // 8
		ev{"assistant/message", text("The parser: a table-driven rewrite (A) or a Pratt parser (B)?")}, // 9
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "paused", "reason", "waiting for a choice")},
		ev{"turn/start", ""},
		ev{"user/message", text("A.")},
		ev{"step/start", "{}"},
		ev{"assistant/message", text("Table-driven rewrite done.")},
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "completed")},
	)
	return nil
}

func writeChild(s *script) error {
	s.add(
		ev{"turn/start", obj("input", map[string]string{"task": "update docs/parser.md"})},
		ev{"user/message", text("update docs/parser.md")},
		ev{"step/start", "{}"},
		ev{"tool/call", obj("id", "r1", "name", "read_file", "args", map[string]string{"path": "docs/parser.md"}, "effect", "read")},
		ev{"tool/result", obj("id", "r1", "output", "# Parser\n")},
		ev{"tool/call", obj("id", "w1", "name", "write_file", "args", map[string]string{"path": "docs/parser.md"}, "effect", "write")},
		ev{"tool/approval", obj("id", "w1", "decision", "approved", "by", "parent")},
		ev{"tool/result", obj("id", "w1", "output", "written")},
		ev{"assistant/message", text("docs/parser.md updated")},
		ev{"usage", obj("inputTokens", 200, "outputTokens", 30, "model", "model-b")},
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "completed")},
	)
	return nil
}

func writeFork(s *script) error {
	s.add(
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "paused", "reason", "waiting for a choice")},
		ev{"turn/start", ""},
		ev{"user/message", text("B.")},
		ev{"step/start", "{}"},
		ev{"assistant/message", text("Pratt parser done.")},
		ev{"usage", obj("inputTokens", 1100, "outputTokens", 95, "model", "model-a")},
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "completed")},
	)
	s.flush()
	return nil
}

// writeResumed writes a turn a crash cut, a torn tail after it, and resumes
// it with recorder.CloseTurn through a new write handle, which cuts the torn
// tail before its first append.
func writeStreamed(s *script) error {
	s.add(
		ev{"turn/start", "{}"},
		ev{"user/message", text("What is in the repo?")},
		ev{"step/start", "{}"},
	)
	s.chunks("Let me ", "list ", "the files.")
	s.add(
		ev{"tool/call", obj("id", "l1", "name", "list_dir", "args", map[string]string{"path": "."}, "effect", "read")},
		ev{"tool/result", obj("id", "l1", "output", "go.mod\nmain.go")},
		ev{"step/end", "{}"},
		ev{"step/start", "{}"},
	)
	s.chunks("A Go module ", "with one ", "main package.")
	s.add(
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "completed")},
		ev{"turn/start", "{}"},
		ev{"user/message", text("And the tests?")},
		ev{"step/start", "{}"},
	)
	s.chunks("None ", "yet")
	s.add(
		ev{"assistant/message", text("None yet.")},
		ev{"step/end", "{}"},
		ev{"step/start", "{}"},
	)
	s.chunks("I could ", "write ", "some, start")
	s.flush()
	return nil
}

func writeResumed(s *script) error {
	s.add(
		ev{"turn/start", obj("input", "upgrade deps")},
		ev{"user/message", text("Upgrade the dependencies and run the tests.")},
		ev{"step/start", "{}"},
		ev{"assistant/reasoning", text("Read go.mod, upgrade, then notify.")},
	)
	s.chunks("Reading ", "go.mod, ", "then ", "upgrading.")
	s.add(
		ev{"assistant/message", text("Reading go.mod, then upgrading.")},
		ev{"tool/call", obj("id", "r1", "name", "read_file", "args", map[string]string{"path": "go.mod"}, "effect", "read")},
		ev{"tool/call", obj("id", "w1", "name", "shell", "args", map[string]string{"cmd": "go get -u ./..."}, "effect", "write")},
		ev{"tool/approval", obj("id", "w1", "decision", "approved", "by", "user")},
		ev{"tool/call", obj("id", "x1", "name", "notify", "args", map[string]string{"to": "team"})},
	)
	if err := s.close(); err != nil {
		return err
	}
	// The crash: a row half written when the process died.
	path := s.h.Path()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(`{"seq":14,"type":"tool/result","time":`)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	st := file.New(afero.NewOsFs(), filepath.Dir(path))
	if s.h, err = st.Open(s.ctx, idResumed, handle.ReadWrite); err != nil {
		return err
	}
	if s.h.Torn() == nil {
		return fmt.Errorf("the torn tail was not found")
	}
	s.t += 60_000 // the restart takes a minute
	if _, err := recorder.CloseTurn(s.ctx, s.h, recorder.WithResumeClock(s.clock())); err != nil {
		return err
	}
	s.add(
		ev{"turn/start", ""},
		ev{"user/message", text("Continue, but check go.sum first.")},
		ev{"step/start", "{}"},
		ev{"tool/call", obj("id", "r2", "name", "read_file", "args", map[string]string{"path": "go.sum"}, "effect", "read")},
		ev{"tool/result", obj("id", "r2", "output", "…")},
		ev{"assistant/message", text("go.sum is consistent; the upgrade did not run. Running it now is safe.")},
		ev{"step/end", "{}"},
		ev{"turn/end", obj("kind", "completed")},
	)
	return nil
}
