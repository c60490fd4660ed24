package chatview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Limits of what Text shows of one block; what it leaves out it says.
const (
	// MaxOutputLines is how many lines of a tool's output are shown.
	MaxOutputLines = 8
	// MaxArgsLines is how many lines a tool call's arguments take.
	MaxArgsLines = 3
	// MaxTextLines is how many lines of a message are shown.
	MaxTextLines = 60
)

// labelWidth is the width of the label column ("summary ").
const labelWidth = 8

// ANSI styles.
const (
	styleNone   = ""
	styleDim    = "2"
	styleBold   = "1"
	styleUser   = "1;36"
	styleAgent  = "1;32"
	styleTool   = "33"
	styleError  = "31"
	styleMarker = "35"
)

// Text lays Blocks out as lines of at most Width runes for a terminal,
// with ANSI colours when Color is set. Abandoned blocks are dimmed and
// carry a "┆ " gutter, so they read as a side branch without colours too.
// A block with secrets redacted ends with a line that says where and of
// what kinds (Redactions.Words).
// It is not safe for concurrent use.
type Text struct {
	w     io.Writer
	width int
	color bool
	err   error
	buf   bytes.Buffer
}

// NewText returns a Text writing to w at width columns (at least 40).
func NewText(w io.Writer, width int, color bool) *Text {
	return &Text{w: w, width: max(width, 40), color: color}
}

// Err returns the first write error; Write stops writing after one.
func (t *Text) Err() error { return t.err }

// line is one line of output: its label (in the label column, or "" for a
// line that starts at the margin) and text, each with its style.
type line struct {
	label, labelStyle string
	text, style       string
	margin            bool // text starts at the margin, not after the label column
}

// Write lays out b.
func (t *Text) Write(b Block) error {
	if t.err != nil {
		return t.err
	}
	width := t.width
	if b.Abandoned {
		width -= 2
	}
	lines := t.layout(b, width)
	if note := b.Redacted.Words(); note != "" {
		lines = append(lines, labelled("", "", note, styleDim, width, MaxArgsLines, "")...)
	}
	t.buf.Reset()
	for _, l := range lines {
		if b.Abandoned {
			t.paint("┆ ", styleDim)
		}
		if !l.margin {
			lbl := l.label
			if l.text != "" { // no trailing blanks on an empty line
				lbl += strings.Repeat(" ", max(labelWidth-displayWidth(l.label), 1))
			}
			t.paint(lbl, t.dim(b, l.labelStyle))
		}
		t.paint(l.text, t.dim(b, l.style))
		t.buf.WriteByte('\n')
	}
	_, t.err = t.w.Write(t.buf.Bytes())
	return t.err
}

// dim is the style of a line of b: abandoned blocks are all dim.
func (t *Text) dim(b Block, style string) string {
	if b.Abandoned {
		return styleDim
	}
	return style
}

func (t *Text) paint(s, style string) {
	if !t.color || style == styleNone || s == "" {
		t.buf.WriteString(s)
		return
	}
	fmt.Fprintf(&t.buf, "\x1b[%sm%s\x1b[0m", style, s)
}

// labelled lays text out under a label: the first line beside it, the
// others indented to the label column, at most maxLines, with a note of
// what was left out.
func labelled(label, labelStyle, text, style string, width, maxLines int, more string) []line {
	body := width - labelWidth
	all := wrap(clean(text), body)
	if len(all) == 0 {
		all = []string{""}
	}
	shown := all
	if maxLines > 0 && len(all) > maxLines {
		shown = all[:maxLines]
	}
	out := make([]line, 0, len(shown)+1)
	for i, s := range shown {
		l := line{text: s, style: style}
		if i == 0 {
			l.label, l.labelStyle = label, labelStyle
		}
		out = append(out, l)
	}
	if left := len(all) - len(shown); left > 0 {
		rest := strings.Join(all[len(shown):], "\n")
		word := "lines"
		if left == 1 {
			word = "line"
		}
		note := fmt.Sprintf("… %s more %s (%s)%s", Thousands(int64(left)), word, Size(int64(len(rest))), more)
		out = append(out, line{text: cut(note, body), style: styleDim})
	}
	return out
}

// marker is a one-line note at the margin.
func marker(text, style string, width int) []line {
	return []line{{text: cut(clean(text), width), style: style, margin: true}}
}

func (t *Text) layout(b Block, width int) []line {
	seeAll := fmt.Sprintf(": logtool cat --from %d --to %d", b.Seq, b.Seq)
	switch b.Kind {
	case KindTurn:
		title := "── turn "
		if b.Turn > 0 {
			title += fmt.Sprint(b.Turn) + " "
		}
		right := fmt.Sprintf(" seq %d · %s ──", b.Seq, clock(b.Time))
		fill := width - displayWidth(title) - displayWidth(right)
		out := []line{{text: cut(title+strings.Repeat("─", max(fill, 2))+right, width), style: styleBold, margin: true}}
		if b.Text != "" {
			out = append(out, labelled("input", styleDim, b.Text, styleDim, width, MaxArgsLines, seeAll)...)
		}
		return out
	case KindUser:
		return labelled("user", styleUser, b.Text, styleNone, width, MaxTextLines, seeAll)
	case KindAssistant:
		label := "agent"
		out := labelled(label, styleAgent, b.Text, styleNone, width, MaxTextLines, seeAll)
		if b.Partial {
			out = append(out, line{text: "(streamed text of a step that never ended)", style: styleDim})
		}
		return out
	case KindReasoning:
		first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(clean(b.Text)), "\n", 2)[0])
		note := fmt.Sprintf("▸ %s folded", Plural(int64(displayWidth(b.Text)), "character", ""))
		if first != "" {
			note += ": " + first
		}
		return []line{{label: "think", labelStyle: styleDim, text: cut(note, width-labelWidth), style: styleDim}}
	case KindToolCall:
		head := b.Name
		var tags []string
		if b.CallID != "" {
			tags = append(tags, b.CallID)
		}
		if b.Effect != "" {
			tags = append(tags, b.Effect)
		}
		if len(tags) > 0 {
			head += "  (" + strings.Join(tags, ", ") + ")"
		}
		out := []line{{label: "call", labelStyle: styleTool, text: cut(clean(head), width-labelWidth), style: styleTool}}
		if args := Compact(b.Args); args != "" && args != "{}" && args != "null" {
			out = append(out, labelled("", "", args, styleNone, width, MaxArgsLines, seeAll)...)
		}
		return out
	case KindApproval:
		text := b.Decision
		if b.Name != "" {
			text += " " + b.Name
		}
		text += " (" + b.CallID + ")"
		if b.By != "" {
			text += " by " + b.By
		}
		style := styleTool
		if b.Decision != "approved" {
			style = styleError
		}
		return []line{{label: "allow", labelStyle: style, text: cut(clean(text), width-labelWidth), style: style}}
	case KindToolResult:
		var out []line
		if b.Error != "" {
			out = labelled("error", styleError, b.Error, styleError, width, MaxOutputLines, seeAll)
		}
		if b.Text != "" || b.Error == "" {
			label := "result"
			if b.Error != "" {
				label = ""
			}
			out = append(out, labelled(label, styleTool, b.Text, styleNone, width, MaxOutputLines, seeAll)...)
		}
		tag := "of " + b.CallID
		if b.Name != "" {
			tag = "of " + b.Name + " (" + b.CallID + ")"
		}
		if b.Synthetic {
			tag += ", synthetic: written by resume"
		}
		if !b.Adjacent || b.Synthetic {
			out = append(out, line{text: cut(clean(tag), width-labelWidth), style: styleDim})
		}
		return out
	case KindUsage:
		return []line{{label: "usage", labelStyle: styleDim, text: cut(clean(b.Usage.Words()), width-labelWidth), style: styleDim}}
	case KindStop:
		s := b.Stop
		if b.Text != "" {
			s += ": " + b.Text
		}
		if b.Resumed && !strings.Contains(b.Text, "resume") {
			s += " (closed by resume)"
		}
		style := styleDim
		switch b.Stop {
		case "completed":
		case "failed", "budget":
			style = styleError
		default:
			style = styleMarker
		}
		return labelled("stop", style, s, style, width, MaxArgsLines, "")
	case KindCheckpoint:
		s := fmt.Sprintf("◆ checkpoint at seq %d", b.Seq)
		if b.Label != "" {
			s += " «" + b.Label + "»"
		}
		return marker(s, styleDim, width)
	case KindRollback:
		s := fmt.Sprintf("↶ rollback at seq %d to seq %d", b.Seq, b.To)
		if b.Label != "" {
			s += " «" + b.Label + "»"
		}
		s += fmt.Sprintf(": %s abandoned", Plural(b.Count, "event", ""))
		out := marker(s, styleMarker, width)
		if b.Text != "" {
			out = append(out, labelled("reason", styleDim, b.Text, styleNone, width, MaxArgsLines, "")...)
		}
		return out
	case KindBranch:
		return marker(fmt.Sprintf("abandoned branch: seq %d rolls back over it to seq %d", b.Rollback, b.To), styleDim, width)
	case KindForkPoint:
		return marker(fmt.Sprintf("⑂ forked from %s after seq %d: this session's own events", b.Session, b.To), styleMarker, width)
	case KindRelated:
		s := fmt.Sprintf("⑂ fork %s goes on from here", b.Session)
		if b.Mode == "child" {
			s = fmt.Sprintf("↳ child session %s spawned here", b.Session)
			if b.CallID != "" {
				s += " by " + b.CallID
			}
		}
		if b.Label != "" {
			s += " (" + b.Label + ")"
		}
		return marker(s, styleMarker, width)
	case KindCompacted:
		return labelled("summary", styleDim, b.Text, styleDim, width, MaxArgsLines, seeAll)
	default:
		data := Compact(b.Data)
		if data == "" {
			data = "null"
		}
		head := b.Type
		if b.Count > 1 {
			head = fmt.Sprintf("%s ×%d, the first:", b.Type, b.Count)
		}
		return []line{{label: "·", labelStyle: styleDim, text: cut(clean(head+" "+data), width-labelWidth), style: styleDim}}
	}
}

// Compact is a JSON value on one line ("" for none; v itself when it is
// not JSON).
func Compact(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// clock shows Unix milliseconds as a UTC time to the second.
func clock(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05Z") }

// Heading writes s as a line of its own at the margin, in bold.
func (t *Text) Heading(s string) error {
	if t.err != nil {
		return t.err
	}
	t.buf.Reset()
	t.paint(cut(clean(s), t.width), styleBold)
	t.buf.WriteByte('\n')
	_, t.err = t.w.Write(t.buf.Bytes())
	return t.err
}
