package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
	"github.com/sessionlog/sessionlog/recorder"
)

// humanTime is how times are shown to people: RFC 3339 in UTC, with
// milliseconds, as events carry them.
const humanTime = "2006-01-02T15:04:05.000Z07:00"

// dataWidth is how many characters of an event's data a human listing shows.
const dataWidth = 100

// writeJSON writes v as one JSON object on one line. HTML characters are
// left alone: the output is for scripts, not for browsers.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// formatTime shows Unix milliseconds as RFC 3339 (UTC).
func formatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(humanTime)
}

// truncate cuts s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n-1 {
			return s[:i] + "…"
		}
		count++
	}
	return s
}

// describeParent says in words where a session comes from.
func describeParent(p *eventlog.Parent) string {
	if p == nil {
		return "-"
	}
	s := fmt.Sprintf("%s of %s at seq %d", p.Mode, p.ID, p.Seq)
	if p.Call != "" {
		s += " (call " + p.Call + ")"
	}
	return s
}

// describeLabels shows labels as k=v pairs in key order, "-" for none.
func describeLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return "-"
	}
	return chatview.LabelWords(labels)
}

// writeStatHuman writes info as aligned "key value" lines.
func writeStatHuman(w io.Writer, info handle.Info, f recorder.Facts) error {
	last := "-"
	if info.LastType != "" {
		last = fmt.Sprintf("seq %d %s at %s", info.LastSeq, info.LastType, formatTime(info.LastTime))
	}
	stop := "-"
	if f.Stop != nil {
		stop = fmt.Sprintf("%s at seq %d", f.Stop.Kind, f.Stop.Seq)
		if f.Stop.Reason != "" {
			stop += " (" + f.Stop.Reason + ")"
		}
	}
	verdict := "may continue: "
	if !f.Verdict.Resumable {
		verdict = "may not continue: "
	}
	_, err := fmt.Fprintf(w, "id        %s\npath      %s\nencoding  %s\ncreated   %s\nparent    %s\nlabels    %s\nevents    %d\nlast      %s\nsize      %s\nopen turn %t\nstop      %s\nverdict   %s\n",
		info.Header.ID, info.Path, info.Encoding, formatTime(info.Header.CreatedAt),
		describeParent(info.Header.Parent), describeLabels(info.Header.Labels), info.Events, last, chatview.Size(info.SizeBytes),
		f.OpenTurn, stop, verdict+f.Verdict.Reason)
	return err
}

// writeEventHuman writes one event as "seq time type data" with the data
// cut to dataWidth.
func writeEventHuman(w io.Writer, e eventlog.Event) error {
	data := "null"
	if e.Data != nil {
		data = truncate(string(e.Data), dataWidth)
	}
	_, err := fmt.Fprintf(w, "%6d  %s  %-20s  %s\n", e.Seq, formatTime(e.Time), e.Type, data)
	return err
}
