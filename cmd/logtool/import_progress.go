package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
)

// importProgress shows an import's progress on one line of stderr, and a
// summary table at the end; off, it writes nothing (stderr piped: the
// default). It is used by the import's one goroutine.
type importProgress struct {
	w  io.Writer
	on bool

	files, filesDone int
	records          int
	bytes            int64
	sessions         int
	shown            bool // the progress line is on screen
}

func newImportProgress(w io.Writer, on bool) *importProgress {
	return &importProgress{w: w, on: on}
}

// add counts the session of one file.
func (p *importProgress) add(s importer.Session, res importResult) {
	p.records += s.Records
	p.bytes += s.Bytes
	if res.Status != statusUnchanged {
		p.sessions++
	}
}

// fileDone counts a unit of files done and redraws the line.
func (p *importProgress) fileDone() {
	p.filesDone++
	if !p.on {
		return
	}
	fmt.Fprintf(p.w, "\r\033[Kimport: %d/%d files, %d records, %s, %d sessions", p.filesDone, p.files, p.records, humanBytes(p.bytes), p.sessions)
	p.shown = true
}

// clear takes the progress line off the screen, before another line.
func (p *importProgress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// summary writes the table of the sessions imported: source bytes, the
// session's raw and zstd bytes, events and records kept, then the totals.
func (p *importProgress) summary(ctx context.Context, st handle.Store, results []importResult) error {
	if !p.on {
		return nil
	}
	p.clear()
	codec, err := eventlog.NewZstdCodec(0)
	if err != nil {
		return err
	}
	defer codec.Close()
	tw := tabwriter.NewWriter(p.w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source bytes\traw bytes\tzstd bytes\tevents\tkept\trecords\tstatus\tfile\t")
	var tot [6]int64
	for _, r := range results {
		if err := ctx.Err(); err != nil {
			return err
		}
		rawN, zN, err := storedSizes(ctx, st, codec, r)
		if err != nil {
			return err
		}
		row := [6]int64{r.SourceBytes, rawN, zN, r.Events, int64(r.Kept), int64(r.Records)}
		for i := range tot {
			tot[i] += row[i]
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", row[0], row[1], row[2], row[3], row[4], row[5], r.Status, filepath.Base(r.Source))
	}
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t\t%d sessions\t\n", tot[0], tot[1], tot[2], tot[3], tot[4], tot[5], len(results))
	return tw.Flush()
}

// storedSizes is what an imported session takes: its raw file and that
// file as zstd frames, on a file store; on another store, the size it
// reports (Stat) and no zstd figure.
func storedSizes(ctx context.Context, st handle.Store, codec *eventlog.ZstdCodec, r importResult) (raw, z int64, err error) {
	fs, ok := st.(*handle.FileStore)
	if !ok {
		info, err := st.Stat(ctx, r.ID)
		return info.SizeBytes, 0, err
	}
	b, err := afero.ReadFile(fs.Fs(), r.Path)
	if err != nil {
		return 0, 0, err
	}
	zb, _ := codec.AppendFrames(nil, b)
	return int64(len(b)), int64(len(zb)), nil
}

// humanBytes is n in B, KB or MB (powers of 1000), for the progress line.
func humanBytes(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1_000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
