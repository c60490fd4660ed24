package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/ops/inspect"
	"github.com/sessionlog/sessionlog/provider"
)

func (a *app) newDiffCmd() *cobra.Command {
	var asJSON, requests bool
	var volatile []string
	cmd := &cobra.Command{
		Use:   "diff [--json] [--requests [--volatile PATH]...] A B",
		Short: "Compare two sessions' logical logs; exit 1 if they differ",
		Long: `Diff compares the logical logs of sessions A and B (IDs, names or files; a
fork's inherited events included) event by event, as canonical bytes
(docs/format.md §6), and prints the first seq where they differ and the
event each side holds there (none when that log ends before it). Headers
are not compared. JSON: {"firstDiff","a","b","lenA","lenB"}, firstDiff, a
and b null when the logs are identical. Exit 0 when identical, 1 when they
differ.

With --requests, diff compares the model requests of A's and B's live
branches instead (their provider records, docs/format.md §8), in order, as
canonical JSON with volatile fields ignored (metadata.user_id, user,
prompt_cache_key, safety_identifier, and each --volatile path), and prints
the first that differs: which call, both seqs, the first differing JSON
path and both values. Requests are compared in clear when --identity opens
their sealed originals, else in their redacted form. JSON:
{"call","seqA","seqB","path","a","b","callsA","callsB"}, or
{"call":null,"callsA","callsB"} when every request is the same.`,
		Example: `  $ logtool diff agent=coder fork.jsonl
  first difference at seq 7 (a: 8 events, b: 9 events)
  a      7  2025-11-29T21:00:09.000Z  turn/start            {"input":"parent"}
  b      7  2025-11-29T21:00:20.000Z  turn/start            {"input":"fork"}`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if requests {
				return a.runDiffRequests(cmd.Context(), args[0], args[1], volatile, a.wantJSON(asJSON), a.stdout)
			}
			return a.runDiff(cmd.Context(), args[0], args[1], a.wantJSON(asJSON), a.stdout)
		},
	}
	jsonFlag(cmd, &asJSON)
	cmd.Flags().BoolVar(&requests, "requests", false, "compare the sessions' model requests (provider records), not their events")
	cmd.Flags().StringArrayVar(&volatile, "volatile", nil, "with --requests, a request field to ignore too (a dotted path, repeatable)")
	return cmd
}

// runDiffRequests prints where two sessions' model requests first differ
// (provider.DiffRequests).
func (a *app) runDiffRequests(ctx context.Context, argA, argB string, volatile []string, asJSON bool, out io.Writer) error {
	ha, hb, closeBoth, err := a.openPair(ctx, argA, argB)
	if err != nil {
		return err
	}
	defer closeBoth()
	d, err := provider.DiffRequests(ctx, ha, hb, provider.KeysFrom(a.identities...), volatile...)
	if err != nil {
		return err
	}
	if asJSON {
		if !d.Differs {
			err = writeJSON(out, map[string]any{"call": nil, "callsA": d.CallsA, "callsB": d.CallsB})
		} else {
			err = writeJSON(out, d)
		}
	} else if !d.Differs {
		_, err = fmt.Fprintf(out, "the same model requests (%d calls)\n", d.CallsA)
	} else {
		_, err = fmt.Fprintf(out, "first differing model request: call %d (a: seq %d of %d calls, b: seq %d of %d calls)\n%s:\n  a %s\n  b %s\n", d.Call, d.SeqA, d.CallsA, d.SeqB, d.CallsB, d.Path, d.A, d.B)
	}
	if err != nil {
		return err
	}
	if d.Differs {
		return failedf("%s and %s differ at model request %d (%s)", argA, argB, d.Call, d.Path)
	}
	return nil
}

// diffResult is what `logtool diff --json` prints.
type diffResult struct {
	FirstDiff *int64          `json:"firstDiff"`
	A         json.RawMessage `json:"a"` // canon(e), or null
	B         json.RawMessage `json:"b"`
	LenA      int64           `json:"lenA"`
	LenB      int64           `json:"lenB"`
}

func (a *app) runDiff(ctx context.Context, argA, argB string, asJSON bool, out io.Writer) error {
	ha, hb, closeBoth, err := a.openPair(ctx, argA, argB)
	if err != nil {
		return err
	}
	defer closeBoth()
	d, err := inspect.Diff(ctx, ha, hb)
	if err != nil {
		return err
	}
	res := diffResult{LenA: d.LenA, LenB: d.LenB}
	if d.Seq >= 0 {
		res.FirstDiff = &d.Seq
		if d.A != nil {
			res.A = eventlog.Canon(*d.A)
		}
		if d.B != nil {
			res.B = eventlog.Canon(*d.B)
		}
	}
	if asJSON {
		err = writeJSON(out, res)
	} else {
		err = writeDiffHuman(out, res, d.A, d.B)
	}
	if err != nil {
		return err
	}
	if d.Seq >= 0 {
		return failedf("%s and %s differ from seq %d", argA, argB, d.Seq)
	}
	return nil
}

// writeDiffHuman says whether the logs are identical, or where they first
// differ and what each side holds there.
func writeDiffHuman(w io.Writer, res diffResult, ea, eb *eventlog.Event) error {
	if res.FirstDiff == nil {
		_, err := fmt.Fprintf(w, "identical: %s\n", plural(res.LenA, "event"))
		return err
	}
	if _, err := fmt.Fprintf(w, "first difference at seq %d (a: %s, b: %s)\n", *res.FirstDiff, plural(res.LenA, "event"), plural(res.LenB, "event")); err != nil {
		return err
	}
	for _, side := range []struct {
		name string
		e    *eventlog.Event
		n    int64
	}{{"a", ea, res.LenA}, {"b", eb, res.LenB}} {
		if _, err := fmt.Fprintf(w, "%s ", side.name); err != nil {
			return err
		}
		if side.e == nil {
			if _, err := fmt.Fprintf(w, "     -  (none: its log ends at seq %d)\n", side.n-1); err != nil {
				return err
			}
			continue
		}
		if err := writeEventHuman(w, *side.e); err != nil {
			return err
		}
	}
	return nil
}

// openPair opens the two sessions diff compares, for reading.
func (a *app) openPair(ctx context.Context, argA, argB string) (ha, hb handle.Handle, closeBoth func(), err error) {
	if _, ha, err = a.openArg(ctx, argA); err != nil {
		return nil, nil, nil, err
	}
	if _, hb, err = a.openArg(ctx, argB); err != nil {
		ha.Close()
		return nil, nil, nil, err
	}
	return ha, hb, func() { ha.Close(); hb.Close() }, nil
}
