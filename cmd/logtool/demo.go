package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle"
	loop "github.com/sessionlog/sessionlog/internal/app/agentloop"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

// agentLoopCmd is the hidden command the demo runs as its child process.
const agentLoopCmd = "__agentloop"

func (a *app) newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo [--dir D]",
		Short: "Run an agent loop, kill it mid-turn, resume, roll back, fork",
		Long: `Demo is the main job on the store: it runs the example agent loop
(examples/agentloop: a scripted model, real tools) as a child process,
kills it with SIGKILL while a command it approved may be running, shows
the open turn, resumes it — the command that may have run gets an
"outcome unknown" result, the call that never started runs, and the turn
goes on to answer the user — lets the loop finish the script, rolls back
to the first turn's checkpoint, forks there, and ends with ls --tree, the
transcript and a clean verify, each step narrated in one line. On --store
it waits for the killed agent's lease to expire.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDemo(cmd.Context(), a.stdout)
		},
	}
}

// newAgentLoopCmd is the demo's child: the example loop, stepped by its
// parent (one line of stdin after every durable point).
func (a *app) newAgentLoopCmd() *cobra.Command {
	return &cobra.Command{
		Use:    agentLoopCmd + " SESSION",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			h, st, err := a.openWriter(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer closeInto(h, &err)
			return loop.Run(cmd.Context(), h, loop.DefaultScript(), loop.Options{
				Workdir: filepath.Join(a.dir, "work"), Progress: a.stdout, Step: bufio.NewReader(a.stdin), Cache: st})
		},
	}
}

func (a *app) runDemo(ctx context.Context, out io.Writer) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, "» "+format+"\n", args...) }
	st, err := a.creating(ctx)
	if err != nil {
		return err
	}
	where := a.location()
	if err := loop.Prepare(filepath.Join(a.dir, "work")); err != nil {
		return err
	}
	h, err := st.Create(ctx, handle.WithLabels(map[string]string{"agent": "agentloop", "title": "demo"}))
	if err != nil {
		return err
	}
	id := h.ID()
	if err := h.Close(); err != nil {
		return err
	}
	say("created session %s in %s (header durable)", id, where)

	// 1. Run the agent loop as a child process and kill it mid-turn.
	acked, err := a.runAndKill(ctx, id, say)
	if err != nil {
		return err
	}
	info, err := st.Stat(ctx, id)
	if err != nil {
		return err
	}
	say("after the kill the log ends at seq %d; every acknowledged event (up to seq %d) is there", info.LastSeq, acked)

	// 2. The stop facts, then resume.
	// A file lock dies with the killed process; a JetStream lease lasts
	// its TTL.
	w, err := st.OpenWhenFree(ctx, id, cliLeaseTTL+time.Second, func() {
		say("the killed agent's writer lock is still held (a lease outlives its process): waiting for it to expire (at most %s)", cliLeaseTTL)
	})
	if err != nil {
		return err
	}
	defer w.Close()
	facts, err := recorder.ReadFacts(ctx, w, st)
	if err != nil {
		return err
	}
	say("stat: open turn %t — %s", facts.OpenTurn, facts.Verdict.Reason)
	res, err := recorder.Resume(ctx, w, recorder.WithResumeCache(st), recorder.WithResumeClock(a.now))
	if err != nil {
		return err
	}
	for e, err := range w.Read(ctx, firstOr(res.Appended, w.Seq()+1), handle.End) {
		if err != nil {
			return err
		}
		say("resume appended seq %d %s %s", e.Seq, e.Type, truncate(string(e.Data), 90))
	}
	say("resume verdict: %s", res.Verdict.Reason)
	if res.TurnOpen {
		say("resume plan: the open turn goes on (%d calls to run, model answered: %t)", len(res.Run), res.Answered)
	}

	// 3. The loop carries on the open turn, then the script, where the
	// log stopped.
	err = loop.Run(ctx, w, loop.DefaultScript(), loop.Options{Workdir: filepath.Join(a.dir, "work"), Cache: st,
		Progress: lineFunc(func(line string) { say("agent (in process): %s", line) })})
	if err != nil {
		return err
	}

	// 4. Checkpoints, a rollback and a fork.
	cps, err := checkpoint.List(ctx, w)
	if err != nil {
		return err
	}
	for _, c := range cps {
		say("checkpoint %q at seq %d (log %s…)", c.Label, c.Seq, c.Log[:19])
	}
	first, err := checkpoint.Find(ctx, w, "turn-1")
	if err != nil {
		return err
	}
	rb, err := checkpoint.Rollback(ctx, w, first.Seq, checkpoint.WithLabel("turn-1"), checkpoint.WithReason("demo: back to the first answer"), checkpoint.WithClock(a.now))
	if err != nil {
		return err
	}
	say("rolled back to checkpoint turn-1 (seq %d) with the event at seq %d: projections return to that state, the later events stay in the log", first.Seq, rb)
	if err := w.Close(); err != nil {
		return err
	}
	fork, err := st.Fork(ctx, id, first.Seq, handle.WithLabels(map[string]string{"agent": "agentloop", "title": "demo fork"}))
	if err != nil {
		return err
	}
	rec, err := recorder.New(ctx, fork, recorder.WithCache(st), recorder.WithClock(a.now))
	if err != nil {
		return err
	}
	if _, err := rec.BeginTurn(ctx, nil); err != nil {
		return err
	}
	if _, err := rec.UserMessage(ctx, "Let us try another way from here.", ""); err != nil {
		return err
	}
	if _, err := rec.EndTurn(ctx, recorder.Paused, "the demo stops here"); err != nil {
		return err
	}
	forkInfo, err := st.Stat(ctx, fork.ID())
	if err != nil {
		return err
	}
	if err := fork.Close(); err != nil {
		return err
	}
	say("forked %s at seq %d into %s: nothing copied (%s on disk for %s)", id, first.Seq, fork.ID(), plural(forkInfo.SizeBytes, "byte"), plural(forkInfo.Events, "event"))

	// 5. The tree, the transcript and a clean verify.
	fmt.Fprintf(out, "\n$ logtool ls --tree\n")
	if err := a.runLsTree(ctx, "", false, false, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n$ logtool replay --projection transcript %s   (rollback applied)\n", id)
	if err := a.printTranscript(ctx, st, id, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n$ logtool verify %s\n", where)
	return a.runVerify(ctx, []string{where}, false, out)
}

// runAndKill runs the agent loop as a child process, stepping it, and kills
// it right after its first tool call of turn 2 is durable; it returns the
// last acknowledged seq.
func (a *app) runAndKill(ctx context.Context, id string, say func(string, ...any)) (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	args := []string{"--dir", a.dir, "--store", a.storeURL, agentLoopCmd, id}
	cmd := exec.CommandContext(ctx, exe, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = a.stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	say("started the agent loop as process %d", cmd.Process.Pid)
	lines := bufio.NewReader(stdout)
	acked := int64(-1)
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return 0, fmt.Errorf("demo: the agent loop ended early: %v", err)
		}
		line = strings.TrimSpace(line)
		var seq int64
		fmt.Sscanf(line, "durable %d", &seq)
		acked = max(acked, seq)
		say("agent (process %d): %s", cmd.Process.Pid, line)
		if strings.Contains(line, "turn 2: tool call") {
			if err := cmd.Process.Kill(); err != nil {
				return 0, err
			}
			cmd.Wait()
			say("killed the agent (SIGKILL) mid-turn: its command was approved and may have run, its result never written")
			return acked, nil
		}
		if _, err := io.WriteString(stdin, "\n"); err != nil {
			return 0, err
		}
	}
}

// printTranscript prints the transcript of a session, one message a line.
func (a *app) printTranscript(ctx context.Context, st handle.Store, id string, out io.Writer) error {
	r, err := st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return err
	}
	defer r.Close()
	tr := projection.NewTranscript()
	if _, err := replay.Replay(ctx, r, []projection.Projection{tr}, replay.WithCache(st)); err != nil {
		return err
	}
	for _, m := range tr.State().Messages {
		text := m.Text
		switch {
		case m.Role == projection.RoleTool:
			text = fmt.Sprintf("[%s %s] %s%s", m.Name, m.ToolCallID, m.Error, string(m.Output))
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				text += fmt.Sprintf(" → %s(%s)", c.Name, string(c.Args))
			}
		}
		fmt.Fprintf(out, "%6d  %-9s  %s\n", m.Seq, m.Role, truncate(strings.ReplaceAll(text, "\n", " "), 100))
	}
	return nil
}

func firstOr(seqs []int64, def int64) int64 {
	if len(seqs) > 0 {
		return seqs[0]
	}
	return def
}

// lineFunc is an io.Writer that calls f with each line written.
type lineFunc func(string)

func (f lineFunc) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		f(strings.TrimSpace(line))
	}
	return len(p), nil
}
