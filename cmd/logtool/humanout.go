package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
	"github.com/sessionlog/sessionlog/recorder"
)

// The output convention (docs/cli.md): every command that has a JSON form
// prints it, one object a line, with --json and whenever stdout is not a
// terminal (so a script that pipes it needs no flag); on a terminal,
// without --json, words and tables for people.

// jsonFlag adds --json to a command whose output has a JSON form.
func jsonFlag(cmd *cobra.Command, asJSON *bool) {
	cmd.Flags().BoolVar(asJSON, "json", false, "print JSON on a terminal too (piped, it always is)")
}

// wantJSON reports whether a command prints JSON: with --json, or when
// stdout is not a terminal.
func (a *app) wantJSON(asJSON bool) bool { return asJSON || !a.isTerminal(a.stdout) }

// printResult writes v as one JSON line for scripts, or human for people
// on a terminal.
func (a *app) printResult(asJSON bool, v any, human func() string) error {
	if a.wantJSON(asJSON) {
		return writeJSON(a.stdout, v)
	}
	_, err := fmt.Fprintln(a.stdout, human())
	return err
}

func humanNew(r newResult) string { return fmt.Sprintf("created session %s in %s", r.ID, r.Path) }

func humanFork(parent string, at int64, r newResult) string {
	return fmt.Sprintf("forked %s after seq %d into %s (%s): nothing copied", parent, at, r.ID, r.Path)
}

func humanCheckpoint(c checkpoint.Info) string {
	s := fmt.Sprintf("checkpoint at seq %d", c.Seq)
	if c.Label != "" {
		s += fmt.Sprintf(" «%s»", c.Label)
	}
	s += fmt.Sprintf(": log %s", shortDigest(c.Log))
	if c.State != nil {
		s += fmt.Sprintf(", %s %s", c.State.Projection, shortDigest(c.State.Digest))
	}
	return s
}

func humanRollback(r rollbackResult) string {
	s := fmt.Sprintf("rolled back at seq %d to seq %d", r.Seq, r.To)
	if r.Label != "" {
		s += fmt.Sprintf(" (checkpoint «%s»)", r.Label)
	}
	return s + ": the events between are an abandoned branch (logtool show draws it)"
}

func humanConvert(r convertResult) string {
	return fmt.Sprintf("converted %s to %s: %s, was %s (%s)", r.ID, r.Encoding, chatview.Size(r.SizeBytes), chatview.Size(r.Before), r.Path)
}

func humanExport(r exportResult) string {
	return fmt.Sprintf("exported %s to %s: %s", r.ID, r.Path, chatview.Plural(r.Events, "event", ""))
}

func humanImport(r importResult) string {
	s := fmt.Sprintf("imported %s as %s: %s", r.Source, r.ID, chatview.Plural(r.Events, "event", ""))
	switch r.Status {
	case "unchanged":
		s = fmt.Sprintf("unchanged: %s was imported as %s already", r.Source, r.ID)
	case "appended":
		s = fmt.Sprintf("appended to %s what %s gained: %s now", r.ID, r.Source, chatview.Plural(r.Events, "event", ""))
	case "failed":
		return fmt.Sprintf("failed: %s: %s", r.Source, r.Reason)
	}
	if r.Partial > 0 {
		s += fmt.Sprintf(" (partial: cut before line %d)", r.Partial)
	}
	return s
}

func humanResume(r recorder.CloseResult) string {
	s := "no open turn: nothing appended"
	switch n := len(r.Appended); {
	case n == 1:
		s = fmt.Sprintf("closed the open turn: 1 event appended (seq %d)", r.Appended[0])
	case n > 1:
		s = fmt.Sprintf("closed the open turn: %d events appended (seqs %d to %d)", n, r.Appended[0], r.Appended[n-1])
	}
	verdict := "may continue"
	if !r.Verdict.Resumable {
		verdict = "may not continue"
	}
	return fmt.Sprintf("%s; the session %s: %s", s, verdict, r.Verdict.Reason)
}

func humanRepair(r handle.RepairReport) string {
	var parts []string
	if t := r.Torn; t != nil {
		parts = append(parts, fmt.Sprintf("cut a torn tail of %s at offset %d (kept in %s)", chatview.Plural(t.Bytes, "byte", ""), t.Offset, t.Side))
	}
	if c := r.Salvaged; c != nil {
		lost := "no events lost"
		if r.FirstLost <= r.LastLost {
			lost = fmt.Sprintf("seqs %d to %d lost", r.FirstLost, r.LastLost)
		}
		parts = append(parts, fmt.Sprintf("cut the damage at offset %d, %s (kept in %s), %s", c.Offset, chatview.Plural(c.Bytes, "byte", ""), c.Side, lost))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing to repair")
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; the log holds %s", chatview.Plural(r.Events, "event", ""))
}

func humanGC(r handle.GCReport, dryRun bool) string {
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	s := fmt.Sprintf("%s %s", verb, chatview.Plural(int64(len(r.Deleted)), "session", ""))
	if len(r.Deleted) > 0 {
		s += " (" + strings.Join(r.Deleted, ", ") + ")"
	}
	if len(r.Kept) > 0 {
		s += fmt.Sprintf("; kept %s that others depend on or a writer holds", chatview.Plural(int64(len(r.Kept)), "old session", ""))
	}
	if len(r.Leftovers) > 0 {
		s += fmt.Sprintf("; %s %s", verb, chatview.Plural(int64(len(r.Leftovers)), "leftover file", ""))
	}
	return s
}

// shortDigest keeps a digest to its first 12 hex digits, for people.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12] + "…"
	}
	return d
}
