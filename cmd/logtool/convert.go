package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
)

func (a *app) newConvertCmd() *cobra.Command {
	var encoding string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "convert --encoding raw|zstd [--json] SESSION",
		Short: "Rewrite a session in another encoding (raw, zstd), atomically",
		Long: `Convert rewrites a session in the other encoding, atomically: the new log
goes to a temp file, is fsynced and read back, and replaces the old only
if its canonical events are byte-identical (every digest is kept); then
rename, fsync the folder, remove the old file. zstd to zstd compacts the
per-flush frames into large ones. A torn tail is not carried over. It takes
the writer lock (exit 1 if a writer holds the session) and prints
{"id","path","encoding","sizeBytes","sizeBytesBefore"}. A crash leaves the
old file, the new one or both holding the same log; the store keeps the
newer (docs/format.md §2).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runConvert(cmd.Context(), args[0], encoding, asJSON)
		},
	}
	cmd.Flags().StringVar(&encoding, "encoding", "", "the encoding to convert to: `raw|zstd`")
	jsonFlag(cmd, &asJSON)
	cmd.MarkFlagRequired("encoding")
	return cmd
}

// convertResult is what `logtool convert` prints.
type convertResult struct {
	ID        string `json:"id"`
	Path      string `json:"path"`
	Encoding  string `json:"encoding"`
	SizeBytes int64  `json:"sizeBytes"`
	Before    int64  `json:"sizeBytesBefore"`
}

func (a *app) runConvert(ctx context.Context, arg, encoding string, asJSON bool) error {
	if encoding != handle.EncodingRaw && encoding != handle.EncodingZstd {
		return usageErrorf("--encoding %q: want raw or zstd", encoding)
	}
	s, files, err := fileSession[handle.Converter](ctx, a, arg, "convert")
	if err != nil {
		return err
	}
	before, err := s.st.Stat(ctx, s.id)
	if err != nil {
		return err
	}
	label := fmt.Sprintf("convert %s (%s) to %s", s.id, chatview.Size(before.SizeBytes), encoding)
	if err := a.busy(label, func() error { return files.Convert(ctx, s.id, encoding) }); err != nil {
		return err
	}
	after, err := s.st.Stat(ctx, s.id)
	if err != nil {
		return err
	}
	res := convertResult{ID: s.id, Path: after.Path, Encoding: after.Encoding,
		SizeBytes: after.SizeBytes, Before: before.SizeBytes}
	return a.printResult(asJSON, res, func() string { return humanConvert(res) })
}
