package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/recorder"
)

// StatReport describes a session. Its JSON is the object of
// `logtool stat --json` and, without the stop facts, a line of
// `ls --json` (docs/cli.md): logtool and serve's /api/ both print it.
type StatReport struct {
	ID        string            `json:"id"`
	Path      string            `json:"path"`
	Encoding  string            `json:"encoding"`
	CreatedAt int64             `json:"createdAt"`
	Parent    *eventlog.Parent  `json:"parent"`
	Labels    map[string]string `json:"labels"` // {} for none, never null
	Events    int64             `json:"events"` // the logical log: a fork's inherited events included
	LastSeq   int64             `json:"lastSeq"`
	LastType  *string           `json:"lastType"` // null when the file holds no event of its own
	LastTime  *int64            `json:"lastTime"`
	SizeBytes int64             `json:"sizeBytes"`
	// OpenTurn and Stop are the stop facts (WithFacts): set by stat, left
	// out by ls, which reads no session's tail.
	OpenTurn *bool       `json:"openTurn,omitempty"`
	Stop     *StopReport `json:"stop,omitempty"`
	// Cursor is set by a page of ls (--limit, --before): --before it
	// lists what follows this session.
	Cursor string `json:"cursor,omitempty"`
}

// StopReport is how a session stopped and whether it may continue.
type StopReport struct {
	Seq     *int64           `json:"seq"` // the last turn/end; null before any
	Kind    string           `json:"kind"`
	Reason  string           `json:"reason"`
	Verdict recorder.Verdict `json:"verdict"`
}

// NewStatReport is what info tells of a session, without stop facts.
func NewStatReport(info handle.Info) StatReport {
	out := StatReport{
		ID: info.Header.ID, Path: info.Path, Encoding: info.Encoding, CreatedAt: info.Header.CreatedAt,
		Parent: info.Header.Parent, Labels: info.Header.Labels, Events: info.Events,
		LastSeq: info.LastSeq, SizeBytes: info.SizeBytes,
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if info.LastType != "" {
		out.LastType, out.LastTime = &info.LastType, &info.LastTime
	}
	return out
}

// WithFacts returns r with the stop facts f (Facts).
func (r StatReport) WithFacts(f recorder.Facts) StatReport {
	stop := StopReport{Verdict: f.Verdict}
	if f.Stop != nil {
		stop.Seq, stop.Kind, stop.Reason = &f.Stop.Seq, f.Stop.Kind, f.Stop.Reason
	}
	open := f.OpenTurn
	r.OpenTurn, r.Stop = &open, &stop
	return r
}

// Stat describes the session of l with its stop facts (Facts): what
// `logtool stat --json` prints.
func Stat(ctx context.Context, l Log) (StatReport, error) {
	info, facts, err := Facts(ctx, l)
	if err != nil {
		return StatReport{}, err
	}
	return NewStatReport(info).WithFacts(facts), nil
}

// TreeReport is one session of a store's forest. Its JSON is a line of
// `ls --tree --json` (docs/cli.md): what the session's List tells (the
// fields of StatReport but the stop facts), where it sits in the tree,
// and why it could not be described, if so.
type TreeReport struct {
	StatReport
	Depth      int     `json:"depth"` // 0 for a root
	ParentGone bool    `json:"parentGone"`
	Error      *string `json:"error,omitempty"`
}

// Report is the row's TreeReport.
func (r ForestRow) Report() TreeReport {
	out := TreeReport{StatReport: NewStatReport(r.Info), Depth: r.Depth, ParentGone: r.Node.ParentGone}
	if r.Err != nil {
		msg := r.Err.Error()
		out.Error = &msg
	}
	return out
}

// List describes the sessions of st as ls lists them: the last active
// first (handle.Info.LastActive), then by ID, descending. It goes on past
// a session it cannot describe, returning its error in broken (named by
// the session's ID); err is a failure of the store itself.
func List(ctx context.Context, st handle.Store, opts ...handle.Option) (infos []handle.Info, broken []error, err error) {
	opts = append(slices.Clip(opts), handle.SkipBroken(func(id string, err error) {
		broken = append(broken, fmt.Errorf("%s: %w", id, err))
	}))
	if infos, err = st.List(ctx, opts...); err != nil {
		return nil, nil, err
	}
	ByActivity(infos)
	return infos, broken, nil
}

// ByActivity orders sessions as ls lists them: the last active first,
// then by ID, descending.
func ByActivity(infos []handle.Info) {
	slices.SortFunc(infos, func(a, b handle.Info) int {
		return cmp.Or(cmp.Compare(b.LastActive(), a.LastActive()), strings.Compare(b.ID, a.ID))
	})
}
