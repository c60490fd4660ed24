package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// demoStep is one event of the demo's scripted turn and what it means.
type demoStep struct {
	typ  string
	data string
	say  string
}

// demoScript is one agent turn in the SPEC §8 vocabulary: a question, one
// model call that streams an answer and reads a file, and the turn's end.
func demoScript() []demoStep {
	return []demoStep{
		{"turn/start", `{"input":"What does a.go do?"}`, "the user starts a turn"},
		{"user/message", `{"text":"What does a.go do?"}`, "what the user said"},
		{"step/start", `{}`, "one model call begins"},
		{"assistant/chunk", `{"text":"Let me "}`, "a streamed delta"},
		{"assistant/chunk", `{"text":"read "}`, "another delta (runs of chunks share one packed row on disk)"},
		{"assistant/chunk", `{"text":"a.go."}`, "the last delta"},
		{"assistant/message", `{"text":"Let me read a.go."}`, "the whole message the chunks made"},
		{"tool/call", `{"id":"c1","name":"read_file","args":{"path":"a.go"},"effect":"read"}`, "a tool call, logged before it runs"},
		{"tool/result", `{"id":"c1","output":"package a\n\nfunc Add(x, y int) int { return x + y }\n"}`, "the tool's result"},
		{"usage", `{"inputTokens":812,"outputTokens":64,"model":"demo-model"}`, "what the model call cost"},
		{"step/end", `{}`, "the model call ends"},
		{"turn/end", `{"kind":"completed"}`, "the turn ends; a new one may start"},
	}
}

func (a *app) newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo [--dir D]",
		Short: "Write a short scripted session into --dir and show it",
		Long: `Demo creates a session in --dir (default ./sessions), appends one agent turn,
flushes it, and shows the result with stat, cat and verify, narrating each step.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDemo(cmd.Context(), a.stdout)
		},
	}
}

func (a *app) runDemo(ctx context.Context, out io.Writer) error {
	h, err := a.store().Create(ctx, handle.WithLabels(map[string]string{"agent": "logtool-demo", "title": "What does a.go do?"}))
	if err != nil {
		return err
	}
	defer h.Close()
	id, path := h.ID(), h.Path()
	fmt.Fprintf(out, "created session %s: %s (header row written and fsynced)\n", id, path)
	t0 := a.now().UnixMilli()
	for i, st := range demoScript() {
		e := eventlog.Event{Type: st.typ, Time: t0 + int64(i)*40, Data: json.RawMessage(st.data)}
		seq, err := h.Append(ctx, e)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "appended seq %2d  %-17s  %s\n", seq, st.typ, st.say)
	}
	if err := h.Flush(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "flushed: seqs 0..%d are durable (one write, one fsync)\n", h.DurableSeq())
	if err := h.Close(); err != nil {
		return err
	}

	fmt.Fprintf(out, "\n$ logtool stat %s\n", id)
	if err := a.runStat(ctx, path, false, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n$ logtool cat %s\n", id)
	if err := a.runCat(ctx, path, catOptions{to: handle.End}, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n$ logtool cat --json --type tool/call %s\n", id)
	if err := a.runCat(ctx, path, catOptions{json: true, to: handle.End, types: []string{"tool/call"}}, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n$ logtool verify %s\n", id)
	return a.runVerify(ctx, []string{path}, false, out)
}
