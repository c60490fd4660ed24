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

// Run resumes h's session if a crash left a turn open, then plays the rest
// of the script: the turns the log does not hold yet.
func Run(ctx context.Context, h handle.Handle, script Script, o Options) error {
	rec, err := recorder.New(ctx, h, recorder.WithCache(o.Cache))
	if err != nil {
		return err
	}
	res, err := rec.Resume(ctx)
	if err != nil {
		return err
	}
	if len(res.Appended) > 0 {
		if err := o.note(h.DurableSeq(), fmt.Sprintf("resumed: closed the open turn with %d events", len(res.Appended))); err != nil {
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
	must := func(_ int64, err error) error { return err }
	if err := must(rec.BeginTurn(ctx, t.User)); err != nil {
		return err
	}
	if err := must(rec.UserMessage(ctx, t.User, "")); err != nil {
		return err
	}
	for s, step := range t.Steps {
		if err := must(rec.BeginStep(ctx)); err != nil {
			return err
		}
		if err := o.note(h.DurableSeq(), fmt.Sprintf("turn %d step %d: request durable, calling the model", n+1, s+1)); err != nil {
			return err
		}
		if step.Reasoning != "" {
			if err := must(rec.Reasoning(ctx, step.Reasoning, "")); err != nil {
				return err
			}
		}
		for _, c := range step.Answer {
			if err := must(rec.Chunk(ctx, c)); err != nil {
				return err
			}
		}
		if err := must(rec.AssistantMessage(ctx, strings.Join(step.Answer, ""), "")); err != nil {
			return err
		}
		for k, call := range step.Calls {
			id := fmt.Sprintf("call_%d_%d_%d", n+1, s+1, k+1)
			args, _ := json.Marshal(call.Args)
			effect := "read"
			if call.Tool == "run_command" {
				effect = "write" // a command may change things
			}
			if err := must(rec.ToolCall(ctx, recorder.Call{ID: id, Name: call.Tool, Args: args, Effect: effect})); err != nil {
				return err
			}
			if err := o.note(h.DurableSeq(), fmt.Sprintf("turn %d: tool call %s (%s) durable, running it", n+1, id, call.Tool)); err != nil {
				return err
			}
			out, runErr := o.run(ctx, call)
			res := recorder.Result{ID: id, Output: out}
			if runErr != nil {
				res.Error = runErr.Error()
			}
			if err := must(rec.ToolResult(ctx, res)); err != nil {
				return err
			}
		}
		if err := must(rec.Usage(ctx, recorder.Usage{InputTokens: int64(200 * (n + 1)), OutputTokens: 20, Model: "scripted"})); err != nil {
			return err
		}
		if err := must(rec.EndStep(ctx)); err != nil {
			return err
		}
		if err := o.note(h.DurableSeq(), fmt.Sprintf("turn %d step %d: results durable", n+1, s+1)); err != nil {
			return err
		}
	}
	if err := must(rec.EndTurn(ctx, recorder.Completed, "")); err != nil {
		return err
	}
	return o.note(h.DurableSeq(), fmt.Sprintf("turn %d: completed, checkpoint taken", n+1))
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
