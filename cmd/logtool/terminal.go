package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/term"
)

// envTerminal overrides terminal detection: "1" treats stdout and stderr
// as terminals, "0" as pipes, "stdout" only stdout as a terminal (words
// and tables through a pipe, no progress drawn on stderr). docs/cli.md: for
// tests and for scripts that run logtool under a pseudo-terminal.
const envTerminal = "SESSIONLOG_TERMINAL"

// defaultWidth is the width of human output when the terminal's is not
// known (and always when piped).
const defaultWidth = 80

// isTerminal reports whether w is a terminal, unless $SESSIONLOG_TERMINAL
// says otherwise. A character device that is not a terminal (/dev/null)
// is not one.
func (a *app) isTerminal(w io.Writer) bool {
	switch a.env(envTerminal) {
	case "1":
		return true
	case "0":
		return false
	case "stdout":
		return w == a.stdout
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colour reports whether output to w may use ANSI colours: only on a
// terminal, and never when $NO_COLOR is set (no-color.org).
func (a *app) colour(w io.Writer) bool {
	return a.isTerminal(w) && a.env("NO_COLOR") == ""
}

// width is the number of columns human output to w fits in: on a
// terminal $COLUMNS when it is set (at least 40), else the terminal's own
// width; piped, or when neither is known, 80.
func (a *app) width(w io.Writer) int {
	if !a.isTerminal(w) {
		return defaultWidth
	}
	if n, err := strconv.Atoi(a.env("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	if f, ok := w.(*os.File); ok {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil && n >= 40 {
			return n
		}
	}
	return defaultWidth
}

// paged runs write with its output sent through the pager when stdout is a
// terminal, as git log does: $PAGER (default less, run with LESS=FRX
// unless $LESS is set: it quits when the text fits on one screen and
// keeps colours). PAGER=cat, or a pager that cannot be started, writes to
// stdout directly. A pager that quits before the end (q in less) ends the
// output without an error.
func (a *app) paged(noPager bool, write func(io.Writer) error) error {
	pager := a.env("PAGER")
	if pager == "" {
		pager = "less"
	}
	if noPager || pager == "cat" || !a.isTerminal(a.stdout) {
		return write(a.stdout)
	}
	cmd := exec.Command("sh", "-c", pager) // the user's own setting, as git runs it
	cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
	cmd.Env = os.Environ()
	if a.env("LESS") == "" {
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	if a.env("LV") == "" {
		cmd.Env = append(cmd.Env, "LV=-c")
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return write(a.stdout)
	}
	if err := cmd.Start(); err != nil {
		return write(a.stdout)
	}
	werr := write(in)
	in.Close()
	cmd.Wait() // the pager's own status is the user's business
	if errors.Is(werr, syscall.EPIPE) || errors.Is(werr, os.ErrClosed) {
		return nil // the reader quit the pager
	}
	return werr
}

// writeIndented writes a JSON value indented by two spaces, for people
// (on a terminal); scripts get writeJSON's one line.
func writeIndented(w io.Writer, v json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Indent(&b, v, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := b.WriteTo(w)
	return err
}
