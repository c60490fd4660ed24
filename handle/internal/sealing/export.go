package sealing

import (
	"context"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// Sealed is a store that tells how its sessions are sealed
// (handle.SealedExporter's SealingOf).
type Sealed interface {
	handle.Store
	SealingOf(ctx context.Context, id string) (*handle.Sealing, error)
}

// Export is every store's handle.SealedExporter.ExportSealed: it writes
// sealed session id's logical log, events 0..to, to w as a standalone
// sealed raw log — its key records, so that the same identities read it,
// and every row, encoded by enc, sealed under its newest data key;
// nothing of the content in clear. It returns how many events it wrote; a
// session that is not sealed is refused (handle.ErrNotSealed).
func Export(ctx context.Context, st Sealed, enc *eventlog.Encoder, id string, w io.Writer, to int64) (int64, error) {
	sl, err := st.SealingOf(ctx, id)
	if err != nil {
		return 0, err
	}
	h, err := st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	if sl == nil {
		return 0, fmt.Errorf("%w: %s", handle.ErrNotSealed, h.Path())
	}
	hdr := h.Header()
	hdr.Parent = nil
	plan, err := PlanWith(hdr, seal.Raw, sl.Envelopes, sl.Key)
	if err != nil {
		return 0, err
	}
	line, err := eventlog.EncodeHeader(hdr)
	if err != nil {
		return 0, err
	}
	out, err := plan.Start(append(line, '\n'))
	if err != nil {
		return 0, err
	}
	var n int64
	var rows []byte
	flush := func() error {
		var err error
		if out, _, err = SealRows(plan.Sealer, out, rows, nil); err != nil {
			return err
		}
		_, err = w.Write(out)
		out, rows = out[:0], rows[:0]
		return err
	}
	for e, err := range h.Read(ctx, 0, to) {
		if err == nil && e.Seq != n {
			err = fmt.Errorf("handle: export %s: event %d where %d was expected", h.Path(), e.Seq, n)
		}
		if err != nil {
			return n, err
		}
		rows = enc.AppendRows(rows, []eventlog.Event{e})
		n++
		if len(rows) >= 1<<20 {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if n != to+1 {
		return n, fmt.Errorf("handle: export %s: the log ended at seq %d, before seq %d", h.Path(), n-1, to)
	}
	return n, flush()
}
