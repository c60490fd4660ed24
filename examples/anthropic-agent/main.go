// Command anthropic-agent is a tool loop on anthropic-sdk-go with extended
// thinking, recorded with sessionlog's provider records. Each argument is
// one user turn, sent in order; the model has two tools that run for real
// in the folder --work: read_file {path} and run_command {command} (sh -c).
//
//	go run ./examples/anthropic-agent --dir D --label task=demo --work W "first message" "second message"
//
// The client is built from the SDK's defaults (ANTHROPIC_BASE_URL,
// ANTHROPIC_API_KEY); --stream streams every call. Killed at any point and
// started again with the same labels, it resumes where the log stopped: it
// asks an incomplete response again, runs the calls without a result
// (run_command, which writes, is not run twice: a call that started gets
// an "outcome unknown" result), finishes the open turn, then sends the
// turns not yet answered; a finished turn is never sent again.
//
// It uses only public APIs: handle, provider and the adapter
// adapters/anthropic.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/spf13/afero"

	adapter "github.com/sessionlog/sessionlog/adapters/anthropic"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

// systemPrompt is the loop's system prompt.
const systemPrompt = "You are a careful agent working in one folder. Use read_file to read a file and run_command to run a shell command there. Answer briefly."

// effects says which tools only read (run again on resume) and which
// write (never run twice).
var effects = map[string]adapter.Effect{"read_file": adapter.Read, "run_command": adapter.Write}

type labels map[string]string

func (l labels) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labels) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("label %q is not k=v", v)
	}
	l[k] = val
	return nil
}

type config struct {
	dir, work, model string
	labels           labels
	stream           bool
	maxTokens        int64
	budget           int64
	out              io.Writer
	// system is the system prompt (systemPrompt), tool the tools'
	// runner (tool): a test changes them to see its fixture diverge.
	system string
	tool   func(ctx context.Context, work string, use sdk.ToolUseBlock) (string, bool)
}

func main() {
	cfg := config{labels: labels{}, out: os.Stdout, system: systemPrompt}
	flag.StringVar(&cfg.dir, "dir", "sessions", "the session store's folder")
	flag.Var(cfg.labels, "label", "a label k=v naming the session (repeat)")
	flag.StringVar(&cfg.work, "work", ".", "the folder the tools run in")
	flag.StringVar(&cfg.model, "model", "claude-sonnet-4-5", "the model")
	flag.BoolVar(&cfg.stream, "stream", false, "stream every call")
	flag.Int64Var(&cfg.maxTokens, "max-tokens", 4096, "max_tokens of each call")
	flag.Int64Var(&cfg.budget, "thinking-budget", 2048, "the extended thinking budget")
	flag.Parse()
	if len(cfg.labels) == 0 {
		cfg.labels["agent"] = "anthropic-agent"
	}
	if err := run(context.Background(), cfg, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "anthropic-agent:", err)
		os.Exit(1)
	}
}

// run sends the turns, resuming the session the labels name.
func run(ctx context.Context, cfg config, turns []string) error {
	st := file.New(afero.NewOsFs(), cfg.dir)
	h, _, err := st.OpenOrCreate(ctx, cfg.labels)
	if errors.Is(err, handle.ErrLocked) { // the previous run's lock, not yet released
		id, _ := handle.LabelID(cfg.labels)
		h, err = st.OpenWhenFree(ctx, id, 30*time.Second, nil)
	}
	if err != nil {
		return err
	}
	defer h.Close()
	ps, err := provider.Open(ctx, h) // secrets sealed to the default key file
	if err != nil {
		return err
	}
	return loop(ctx, cfg, turns, ps, sdk.NewClient(adapter.Record(ps)))
}

// loop sends the turns through client, recorded by ps, carrying on from
// what ps's log holds.
func loop(ctx context.Context, cfg config, turns []string, ps *provider.Session, client sdk.Client) error {
	for {
		next, err := adapter.Current(ctx, ps, effects)
		if err != nil {
			return err
		}
		for _, c := range next.Run {
			if err := runTool(ctx, ps, cfg, c); err != nil {
				return err
			}
		}
		if len(next.Run) > 0 {
			continue // send the request the results complete
		}
		p := next.Params
		if next.Done {
			if next.Turns >= len(turns) {
				return nil
			}
			if len(p.Messages) == 0 {
				p = cfg.params()
			}
			fmt.Fprintf(cfg.out, "user: %s\n", turns[next.Turns])
			p.Messages = append(p.Messages, sdk.NewUserMessage(sdk.NewTextBlock(turns[next.Turns])))
		}
		if err := send(ctx, client, cfg, p); err != nil {
			return err
		}
	}
}

// runTool runs a call, or gives it the outcome-unknown result, and
// records its result.
func runTool(ctx context.Context, ps *provider.Session, cfg config, c adapter.Call) error {
	if c.Unknown {
		fmt.Fprintf(cfg.out, "tool %s: %s\n", c.Use.Name, adapter.OutcomeUnknown)
		return adapter.OutcomeUnknownResult(ctx, ps, c.Use.ID)
	}
	if c.Effect == adapter.Write {
		if _, err := ps.BeginTool(ctx, c.Use.ID); err != nil {
			return err
		}
	}
	run := tool
	if cfg.tool != nil {
		run = cfg.tool
	}
	out, failed := run(ctx, cfg.work, c.Use)
	fmt.Fprintf(cfg.out, "tool %s: %d bytes\n", c.Use.Name, len(out))
	return adapter.RecordResult(ctx, ps, c.Use.ID, out, failed)
}
