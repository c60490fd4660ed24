package transfer

import (
	"context"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// exportBatch is how many bytes of rows Export encodes before it writes
// them.
const exportBatch = 1 << 20

// Export writes src's logical log, events 0..to (to <= src.Seq()), to w as
// a standalone raw session: the header keeps the session's ID, createdAt
// and labels but names no parent, and every event — a fork's inherited
// ones included — is a row. Its canonical lines are src's, byte for byte,
// so every checkpoint up to to verifies in it. Nothing is written before
// the first events are read, so a fork whose lineage is broken fails
// before any output. It returns how many events it wrote.
func Export(ctx context.Context, src handle.Handle, w io.Writer, to int64) (int64, error) {
	hdr := src.Header()
	hdr.Parent = nil
	hdr.Version = eventlog.Version
	line, err := eventlog.EncodeHeader(hdr)
	if err != nil {
		return 0, fmt.Errorf("transfer: export: header of %s: %w", src.ID(), err)
	}
	enc := eventlog.NewEncoder(nil)
	buf := append(line, '\n')
	var batch []eventlog.Event
	n := int64(0)
	write := func() error {
		buf = enc.AppendRows(buf, batch)
		batch = batch[:0]
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	size := 0
	for e, err := range src.Read(ctx, 0, to) {
		if err != nil {
			return n, err
		}
		if e.Seq != n {
			return n, fmt.Errorf("transfer: export: %s: event %d where %d was expected", src.Path(), e.Seq, n)
		}
		batch = append(batch, e)
		size += eventlog.RowSize(e)
		n++
		if size >= exportBatch {
			if err := write(); err != nil {
				return n, err
			}
			size = 0
		}
	}
	if n != to+1 {
		return n, fmt.Errorf("transfer: export: %s: the log ended at seq %d, before seq %d", src.Path(), n-1, to)
	}
	return n, write()
}
