package main

import (
	"fmt"

	"github.com/sessionlog/sessionlog/internal/app/chatview"
)

// plural says n things in words, the plural form made with an s: "1
// event", "2 events", "no events".
func plural(n int64, one string) string { return chatview.Plural(n, one, "") }

// seqsWords says a range of seqs in words: "seq 4", "seqs 4 to 9", and
// "no seqs" for an empty one (last < first).
func seqsWords(first, last int64) string {
	switch {
	case last < first:
		return "no seqs"
	case last == first:
		return fmt.Sprintf("seq %d", first)
	}
	return fmt.Sprintf("seqs %d to %d", first, last)
}

// holdsWords says what a log whose last seq is last holds: "holds no
// events", "holds seq 0", "holds seqs 0 to 7".
func holdsWords(last int64) string {
	if last < 0 {
		return "holds no events"
	}
	return "holds " + seqsWords(0, last)
}
