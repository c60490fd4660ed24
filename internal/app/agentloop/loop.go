package agentloop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

// Turn is one scripted exchange: what the user says and the model's steps.
type Turn struct {
	User  string
	Steps []Step
}

// Step is one scripted model call: its reasoning, its streamed answer and
// the tools it calls (the last step of a turn calls none).
type Step struct {
	Reasoning string
	Answer    []string // streamed chunks
	Calls     []Call
}

// Call is a scripted tool call.
type Call struct {
	Tool string   // "read_file" or "run_command"
	Args []string // the path, or the command and its arguments
}

// Script is the conversation the scripted model plays.
type Script []Turn

// DefaultScript is a short session over a folder holding notes.txt.
func DefaultScript() Script {
	return Script{
		{User: "What is in notes.txt?", Steps: []Step{
			{Reasoning: "The user asks about a file; read it first.", Answer: []string{"Let me ", "read ", "the file."},
				Calls: []Call{{Tool: "read_file", Args: []string{"notes.txt"}}}},
			{Answer: []string{"notes.txt ", "lists three ", "tasks."}},
		}},
		{User: "How many lines does it have, and what is in the folder?", Steps: []Step{
			{Answer: []string{"I will ", "count and list."},
				Calls: []Call{{Tool: "run_command", Args: []string{"wc", "-l", "notes.txt"}}, {Tool: "run_command", Args: []string{"ls"}}}},
			{Answer: []string{"It has ", "three lines; ", "the folder holds notes.txt."}},
		}},
		{User: "Thanks!", Steps: []Step{{Answer: []string{"You ", "are ", "welcome."}}}},
	}
}

// Options configure Run.
type Options struct {
	// Workdir is the folder the tools work in.
	Workdir string
	// Progress, when not nil, gets one line per durable point:
	// "durable <seq> <what>".
	Progress io.Writer
	// Step, when not nil, is read for one line after every progress
	// line before going on (a test or the demo steps the loop).
	Step *bufio.Reader
	// Cache lets the recorder and resume start from stored states.
	Cache replay.Cache
}

// Run carries on h's session: a turn a crash left open goes on where the
// log stopped (Recorder.Resume: a partial response is asked again, a call
// without a result is run unless it may have run), then the script plays
// the turns the log does not hold yet. An open turn the script has no
// turn for is closed as interrupted (Recorder.CloseTurn).
func Run(ctx context.Context, h handle.Handle, script Script, o Options) error {
	rec, err := recorder.New(ctx, h, recorder.WithCache(o.Cache))
	if err != nil {
		return err
	}
	plan, err := rec.Resume(ctx)
	if err != nil {
		return err
	}
	if len(plan.Appended) > 0 {
		if err := o.note(h.DurableSeq(), fmt.Sprintf("resumed: %d events appended (a partial response forgotten, results of calls that may have run, a step ended)", len(plan.Appended))); err != nil {
			return err
		}
	}
	if plan.TurnOpen {
		n := rec.State().Turns - 1
		if n < 0 || n >= len(script) {
			if _, err := rec.CloseTurn(ctx); err != nil {
				return err
			}
		} else if err := o.carryOn(ctx, rec, h, n, script[n], plan); err != nil {
			return err
		}
	}
	for i := rec.State().Turns; i < len(script); i++ {
		if err := o.turn(ctx, rec, h, i, script[i]); err != nil {
			return err
		}
	}
	return nil
}

func (o Options) note(seq int64, what string) error {
	if o.Progress != nil {
		if _, err := fmt.Fprintf(o.Progress, "durable %d %s\n", seq, what); err != nil {
			return err
		}
	}
	if o.Step != nil {
		if _, err := o.Step.ReadString('\n'); err != nil {
			return fmt.Errorf("loop: stepped: %w", err)
		}
	}
	return nil
}

func (o Options) turn(ctx context.Context, rec *recorder.Recorder, h handle.Handle, n int, t Turn) error {
	if _, err := rec.BeginTurn(ctx, t.User); err != nil {
		return err
	}
	if _, err := rec.UserMessage(ctx, t.User, ""); err != nil {
		return err
	}
	return o.steps(ctx, rec, h, n, t, 0)
}

// carryOn goes on with the open turn n: the calls the plan says to run,
// then the steps the log does not hold (the scripted model answers the
// same conversation the same way).
func (o Options) carryOn(ctx context.Context, rec *recorder.Recorder, h handle.Handle, n int, t Turn, plan recorder.ResumeResult) error {
	done, err := stepsEnded(ctx, h, plan.Turn)
	if err != nil {
		return err
	}
	if err := o.note(h.DurableSeq(), fmt.Sprintf("turn %d: carried on after %d steps, %d calls to run", n+1, done, len(plan.Run))); err != nil {
		return err
	}
	for _, c := range plan.Run {
		if err := o.call(ctx, rec, h, n, c); err != nil {
			return err
		}
	}
	if plan.Answered {
		done = len(t.Steps)
	}
	return o.steps(ctx, rec, h, n, t, done)
}

// stepsEnded counts the step/end events of the turn that starts at seq
// turn. The loop's only rollback is Resume's, of a step with no end, so
// every step/end after the turn's start is on the live branch.
func stepsEnded(ctx context.Context, h handle.Handle, turn int64) (int, error) {
	n := 0
	for e, err := range h.Read(ctx, max(turn, 0), handle.End) {
		if err != nil {
			return 0, err
		}
		if e.Type == "step/end" {
			n++
		}
	}
	return n, nil
}

// steps plays the turn's steps from step from, then ends the turn.
func (o Options) steps(ctx context.Context, rec *recorder.Recorder, h handle.Handle, n int, t Turn, from int) error {
	for s := from; s < len(t.Steps); s++ {
		step := t.Steps[s]
		if _, err := rec.BeginStep(ctx); err != nil {
			return err
		}
		if err := o.note(h.DurableSeq(), fmt.Sprintf("turn %d step %d: request durable, calling the model", n+1, s+1)); err != nil {
			return err
		}
		for _, c := range step.Answer {
			if _, err := rec.Chunk(ctx, c); err != nil {
				return err
			}
		}
		resp := recorder.Response{
			Usage:      &recorder.Usage{InputTokens: int64(200 * (n + 1)), OutputTokens: 20, Model: "scripted"},
			StopReason: "end_turn",
		}
		if step.Reasoning != "" {
			resp.Reasoning = []recorder.Reasoning{{Text: step.Reasoning}}
		}
		for k, call := range step.Calls {
			args, _ := json.Marshal(call.Args)
			effect := "read"
			if call.Tool == "run_command" {
				effect = "write" // a command may change things
			}
			resp.Calls = append(resp.Calls, recorder.Call{ID: fmt.Sprintf("call_%d_%d_%d", n+1, s+1, k+1), Name: call.Tool, Args: args, Effect: effect})
			resp.StopReason = "tool_use"
		}
		if _, err := rec.Response(ctx, resp); err != nil {
			return err
		}
		if err := o.note(h.DurableSeq(), fmt.Sprintf("turn %d step %d: response durable with its %d calls", n+1, s+1, len(resp.Calls))); err != nil {
			return err
		}
		for _, c := range resp.Calls {
			if err := o.call(ctx, rec, h, n, c); err != nil {
				return err
			}
		}
	}
	if _, err := rec.EndTurn(ctx, recorder.Completed, ""); err != nil {
		return err
	}
	return o.note(h.DurableSeq(), fmt.Sprintf("turn %d: completed, checkpoint taken", n+1))
}

// call runs one tool call and records its result. A call that writes is
// approved durably first: after a crash, a write call without an
// approval certainly never ran, and one with an approval may have.
func (o Options) call(ctx context.Context, rec *recorder.Recorder, h handle.Handle, n int, c recorder.Call) error {
	if c.Effect != "read" {
		if _, err := rec.ToolApproval(ctx, c.ID, "approved", "agentloop"); err != nil {
			return err
		}
	}
	if err := o.note(h.DurableSeq(), fmt.Sprintf("turn %d: tool call %s (%s) durable, running it", n+1, c.ID, c.Name)); err != nil {
		return err
	}
	var args []string
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return fmt.Errorf("loop: call %s: %w", c.ID, err)
	}
	out, runErr := o.run(ctx, Call{Tool: c.Name, Args: args})
	res := recorder.Result{ID: c.ID, Output: out}
	if runErr != nil {
		res.Error = runErr.Error()
	}
	_, err := rec.ToolResult(ctx, res)
	return err
}

// run runs a tool in the work folder.
func (o Options) run(ctx context.Context, c Call) (string, error) {
	switch c.Tool {
	case "read_file":
		if len(c.Args) != 1 || filepath.IsAbs(c.Args[0]) || strings.Contains(c.Args[0], "..") {
			return "", fmt.Errorf("read_file: want one relative path")
		}
		b, err := os.ReadFile(filepath.Join(o.Workdir, c.Args[0]))
		return string(b), err
	case "run_command":
		if len(c.Args) == 0 {
			return "", fmt.Errorf("run_command: no command")
		}
		cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
		cmd.Dir = o.Workdir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	return "", fmt.Errorf("unknown tool %q", c.Tool)
}

// Prepare writes the files the default script's tools use into dir.
func Prepare(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("- write the spec\n- build the log\n- test a crash\n"), 0o600)
}
