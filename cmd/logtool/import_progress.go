package main

import (
	"context"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/ingest"
	"github.com/sessionlog/sessionlog/internal/chatview"
)

// importBar is import's progress bar on stderr: bytes of the sources done
// of all, the file being read and the sessions so far. It is made at the
// first news from ingest (which knows the total); off, it draws nothing.
type importBar struct {
	a    *app
	on   bool
	bar  *progress
	done int64
}

func (a *app) importBar(on bool) *importBar { return &importBar{a: a, on: on} }

// update takes ingest's news.
func (b *importBar) update(p ingest.Progress) {
	if !b.on {
		return
	}
	if b.bar == nil {
		b.bar = b.a.newProgress("import", max(p.Bytes, 1), chatview.Size)
		b.bar.on = true // --progress always draws it on any stderr
		b.bar.draw(true)
	}
	s := p.Summary
	b.bar.mu.Lock()
	b.bar.label = fmt.Sprintf("import %d/%d files (%d created, %d appended, %d unchanged, %d failed)",
		p.FilesDone, p.Files, s.Created, s.Appended, s.Unchanged, s.Failed)
	b.bar.mu.Unlock()
	b.bar.add(p.BytesDone - b.done)
	b.done = p.BytesDone
}

// finish removes the bar.
func (b *importBar) finish() {
	if b.bar != nil {
		b.bar.finish()
	}
}

// importSummary writes, when on, the table of the sources imported:
// source bytes, the session's raw bytes and the bytes it would take in
// zstd, events, records kept, records, status and file, then the totals
// and the count of each status.
func (a *app) importSummary(ctx context.Context, on bool, st handle.Store, sum ingest.Summary) error {
	if !on {
		return nil
	}
	codec, err := eventlog.NewZstdCodec(0)
	if err != nil {
		return err
	}
	defer codec.Close()
	tw := tabwriter.NewWriter(a.stderr, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source bytes\traw bytes\tzstd bytes\tevents\tkept\trecords\tstatus\tfile\t")
	var tot [6]int64
	for _, r := range sum.Results {
		if err := ctx.Err(); err != nil {
			return err
		}
		var rawN, zN int64
		if r.Status != ingest.Failed {
			if rawN, zN, err = storedSizes(ctx, st, codec, r); err != nil {
				return err
			}
		}
		row := [6]int64{r.SourceBytes, rawN, zN, r.Events, int64(r.Kept), int64(r.Records)}
		for i := range tot {
			tot[i] += row[i]
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", row[0], row[1], row[2], row[3], row[4], row[5], r.Status, filepath.Base(r.Source))
	}
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t\t%d sessions\t\n", tot[0], tot[1], tot[2], tot[3], tot[4], tot[5], len(sum.Results))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stderr, "%d created, %d appended, %d unchanged, %d failed\n", sum.Created, sum.Appended, sum.Unchanged, sum.Failed)
	return err
}

// storedSizes is what an imported session takes: its raw file and that
// file as zstd frames, on a file store; on another store, the size it
// reports (Stat) and no zstd figure.
func storedSizes(ctx context.Context, st handle.Store, codec *eventlog.ZstdCodec, r ingest.Result) (raw, z int64, err error) {
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
