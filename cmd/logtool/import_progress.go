package main

import (
	"context"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/sessionlog/sessionlog/internal/app/chatview"
	"github.com/sessionlog/sessionlog/ops/ingest"
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
// source bytes, what the session takes in the store and its encoding (as
// the import found them: never a second reading), events, records kept,
// records, status and the source's path as a person tells it apart (see
// shownSources), then the totals and the count of each status.
func (a *app) importSummary(ctx context.Context, on bool, sum ingest.Summary) error {
	if !on {
		return nil
	}
	tw := tabwriter.NewWriter(a.stderr, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source bytes\tstored bytes\tencoding\tevents\tkept\trecords\tstatus\tfile\t")
	var tot [5]int64
	shown := shownSources(sum.Results)
	for i, r := range sum.Results {
		if err := ctx.Err(); err != nil {
			return err
		}
		row := [5]int64{r.SourceBytes, r.StoredBytes, r.Events, int64(r.Kept), int64(r.Records)}
		for i := range tot {
			tot[i] += row[i]
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t\n", row[0], row[1], r.Encoding, row[2], row[3], row[4], r.Status, shown[i])
	}
	fmt.Fprintf(tw, "%d\t%d\t\t%d\t%d\t%d\t\t%d sessions\t\n", tot[0], tot[1], tot[2], tot[3], tot[4], len(sum.Results))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.stderr, "%d created, %d appended, %d unchanged, %d failed\n", sum.Created, sum.Appended, sum.Unchanged, sum.Failed)
	return err
}

// shownSources are the results' sources as the summary shows them: a file
// found under a folder argument by its path relative to that folder (a
// subagent's, to its transcript's folder), a file named as it was given;
// a path two results would show alike is shown whole.
func shownSources(results []ingest.Result) []string {
	out := make([]string, len(results))
	count := map[string]int{}
	for i, r := range results {
		out[i] = r.Source
		if r.Arg != "" && r.Arg != r.Source {
			if rel, err := filepath.Rel(r.Arg, r.Source); err == nil && filepath.IsLocal(rel) {
				out[i] = rel
			}
		}
		count[out[i]]++
	}
	for i, r := range results {
		if count[out[i]] > 1 {
			out[i] = r.Source
		}
	}
	return out
}
