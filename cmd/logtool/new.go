package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// newOptions are the flags of `logtool new`.
type newOptions struct {
	encoding string
	labels   []string
	parent   string
	at       int64
	mode     string
	call     string
	json     bool
	// recipients seal the session (docs/format.md §11).
	recipients []string
}

func (a *app) newNewCmd() *cobra.Command {
	var o newOptions
	cmd := &cobra.Command{
		Use:   "new [--encoding raw|zstd] [--label k=v]... [--parent ID --at S --mode fork|child [--call ID]] [--recipient age1…]... [--json]",
		Short: `Create a session in the store and print {"id","path"}`,
		Long: `New creates a session in the store and prints {"id","path"}; it is durable
when printed. --encoding raw (the default, <ID>.jsonl) or zstd
(<ID>.jsonl.zst, one zstd frame a flush); every command reads both alike.
--label k=v may be repeated (a key given twice is refused).

--parent names a session of the store (any name SESSION takes) and needs
--at S and --mode. fork: the new session's logical log is the parent's
events 0..S followed by its own, which start at S+1. child: a sub-session
spawned at the parent's event S (--call: the delegating tool call's id);
it inherits nothing. A parent that does not hold event S is a usage error.

--recipient (repeatable; default $SESSIONLOG_RECIPIENTS, space separated)
seals the session for those age public keys (keygen makes one); a fork of a
sealed session is sealed whatever the flags (docs/format.md §11).`,
		Example: `  $ logtool new --label agent=coder
  {"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","path":"sessions/01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl"}
  $ logtool new --parent agent=coder --at 41 --mode child --call c7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			return a.runNew(cmd.Context(), o, fl.Changed("at"), fl.Changed("mode"), fl.Changed("call"))
		},
	}
	fl := cmd.Flags()
	jsonFlag(cmd, &o.json)
	fl.StringVar(&o.encoding, "encoding", handle.EncodingRaw, "physical encoding: `raw|zstd`")
	fl.StringArrayVar(&o.labels, "label", nil, "a label `k=v` (repeatable)")
	fl.StringVar(&o.parent, "parent", "", "the parent `SESSION`: any name SESSION takes")
	seqFlag(fl, &o.at, "at", "the parent's seq to fork at or spawn the child from")
	fl.StringVar(&o.mode, "mode", "", "relation to the parent: `fork|child`")
	fl.StringVar(&o.call, "call", "", "the parent's tool call `ID` that spawned a child")
	fl.StringArrayVar(&o.recipients, "recipient", nil,
		"seal the session for this age `recipient`, an age1… public key (repeatable); $"+envRecipients+" holds the default")
	return cmd
}

// newResult is what `logtool new` prints.
type newResult struct {
	ID   string `json:"id"`
	Path string `json:"path"`
}

func (a *app) runNew(ctx context.Context, o newOptions, atSet, modeSet, callSet bool) error {
	if o.encoding != handle.EncodingRaw && o.encoding != handle.EncodingZstd {
		return usageErrorf("--encoding %q: want raw or zstd", o.encoding)
	}
	labels, err := parseLabels(o.labels)
	if err != nil {
		return err
	}
	st, err := a.creating(ctx)
	if err != nil {
		return err
	}
	opts := []handle.Option{handle.WithEncoding(o.encoding)}
	if labels != nil {
		opts = append(opts, handle.WithLabels(labels))
	}
	rs, err := a.recipients(o.recipients)
	if err != nil {
		return err
	}
	if len(rs) > 0 {
		opts = append(opts, handle.WithRecipients(rs...))
	}
	if o.parent == "" {
		if atSet || modeSet || callSet {
			return usageErrorf("--at, --mode and --call need --parent")
		}
	} else {
		p, err := checkParent(o, atSet, modeSet, callSet)
		if err != nil {
			return err
		}
		parent, err := st.Resolve(ctx, o.parent)
		if err != nil {
			return a.nameError(o.parent, a.where(), err)
		}
		if p.ID = parent.ID; p.Seq > parent.LastSeq {
			return usageErrorf("--at %d: the parent %s %s", p.Seq, p.ID, holdsWords(parent.LastSeq))
		}
		opts = append(opts, handle.WithParent(p))
	}
	h, err := st.Create(ctx, opts...)
	if err != nil {
		return err
	}
	res := newResult{ID: h.ID(), Path: h.Path()}
	if err := h.Close(); err != nil {
		return err
	}
	return a.printResult(o.json, res, func() string { return humanNew(res) })
}

// parseLabels turns k=v flags into a map; nil when there are none.
func parseLabels(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	labels := make(map[string]string, len(flags))
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--label %q: want k=v", f)
		}
		if _, dup := labels[k]; dup {
			return nil, usageErrorf("--label %q: key %q given twice", f, k)
		}
		labels[k] = v
	}
	return labels, nil
}

// checkParent validates the parent flags. That the parent exists in the
// store and holds the event at --at is checked after (a usage error, exit
// 2), and again by Create (handle.ErrLineage, exit 1, when the parent
// changed meanwhile), so no session is created whose lineage is broken
// from the start.
func checkParent(o newOptions, atSet, modeSet, callSet bool) (eventlog.Parent, error) {
	p := eventlog.Parent{ID: o.parent, Seq: o.at, Mode: o.mode, Call: o.call}
	switch {
	case !atSet || !modeSet:
		return p, usageErrorf("--parent needs --at and --mode")
	case o.mode != eventlog.ModeFork && o.mode != eventlog.ModeChild:
		return p, usageErrorf("--mode %q: want fork or child", o.mode)
	case o.at < 0:
		return p, usageErrorf("--at %d: want a seq >= 0", o.at)
	case callSet && o.mode != eventlog.ModeChild:
		return p, usageErrorf("--call is for --mode child")
	}
	return p, nil
}
