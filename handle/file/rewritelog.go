package file

import (
	"context"
	"io"

	"github.com/sessionlog/sessionlog/handle/internal/sealing"
)

// ExportSealed writes sealed session id's logical log, events 0..to, to w
// as a standalone sealed raw log (as transfer.Export writes a clear one:
// no parent, a fork's inherited events its own rows, its canonical lines
// the session's): the same key records, so the same identities read it,
// and every row sealed under the session's newest data key. Nothing of
// the content is written in clear. It returns how many events it wrote;
// a session that is not sealed is refused (handle.ErrNotSealed).
func (s *Store) ExportSealed(ctx context.Context, id string, w io.Writer, to int64) (int64, error) {
	return sealing.Export(ctx, s, s.enc, id, w, to)
}
