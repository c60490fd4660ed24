package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/ops/storeurl"
	"github.com/sessionlog/sessionlog/ops/transfer"
)

// envStore names the environment variable holding the default --store.
const envStore = "SESSIONLOG_STORE"

// cliLeaseTTL is the writer lease of logtool's JetStream handles: short,
// so that a killed logtool's session is writable again within seconds
// (?lease= in the URL changes it).
const cliLeaseTTL = 5 * time.Second

// location names the store the commands use: --store when it is given
// (a URL, or a folder), else --dir.
func (a *app) location() string {
	if a.storeURL != "" {
		return a.storeURL
	}
	return a.dir
}

// sessions returns the store the commands use (location), opened once a
// run. It must exist: a folder that is not there is an error, not an
// empty store (a mistyped --dir), but for the commands that create
// sessions, which call creating first.
func (a *app) sessions(ctx context.Context) (handle.Store, error) {
	if a.st == nil {
		var opts []storeurl.Option
		if !a.creates {
			opts = append(opts, storeurl.Existing())
		}
		if a.readOnly {
			opts = append(opts, storeurl.ReadOnly())
		}
		st, closeFn, err := a.openStoreURL(ctx, a.location(), opts...)
		if errors.Is(err, storeurl.ErrNoStore) {
			return nil, fmt.Errorf("%w (give --dir D or --store URL; $%s and $%s set the defaults)", err, envDir, envStore)
		}
		if err != nil {
			return nil, err
		}
		a.st, a.closers = st, append(a.closers, closeFn)
	}
	return a.st, nil
}

// creating returns the store the commands use, which need not exist yet:
// a session created there makes its folder.
func (a *app) creating(ctx context.Context) (handle.Store, error) {
	a.creates = true
	return a.sessions(ctx)
}

// where says where the store in use is, for messages: --dir "D" or
// --store URL.
func (a *app) where() string {
	if a.storeURL != "" {
		return "--store " + a.storeURL
	}
	return fmt.Sprintf("--dir %q", a.dir)
}

// openStoreURL opens the store at a URL or a folder (storeurl.Open),
// with logtool's lease and its warnings on stderr.
func (a *app) openStoreURL(ctx context.Context, raw string, opts ...storeurl.Option) (handle.Store, func(), error) {
	base := []storeurl.Option{storeurl.WithFs(a.fs), storeurl.WithLeaseTTL(cliLeaseTTL), storeurl.WithClientName("logtool"),
		storeurl.With(handle.WithLogger(slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
			handle.WithIdentities(a.identities...))}
	if a.noRedact {
		base = append(base, storeurl.With(handle.Unredacted()))
	}
	return storeurl.Open(ctx, raw, append(base, opts...)...)
}

// closeStores closes the connections the run opened.
func (a *app) closeStores() {
	for _, c := range a.closers {
		c()
	}
	a.closers, a.st = nil, nil
}

// writeStore returns the store s can be written through, or nil for a
// freely named file.
func (s session) writeStore() handle.Store { return s.st }

func (a *app) newCopyCmd() *cobra.Command {
	var ids []string
	var encoding string
	cmd := &cobra.Command{
		Use:   "copy [--id ID]... [--encoding raw|zstd] SRC DST",
		Short: "Copy sessions between stores (folders or nats:// URLs), keeping every digest",
		Long: `Copy copies the sessions of store SRC (every one, or those --id names: any
name SESSION takes, looked up in SRC) to store DST; a store is a folder or
nats://host:port[,host:port...][/prefix][?replicas=N&sync=always&lease=D]
(docs/distributed.md). Each session keeps its ID, header, labels and
lineage (parents first), and its encoding unless --encoding says otherwise
(a JetStream store keeps raw logs only); its log digest, read back from
DST, is checked to be the source's (a copy that differs is removed, exit
1). Each copy is all or nothing: killed at any instant,
the session is absent from DST or complete. A session DST holds already
with the same lineage and log (in any encoding) is left as it is
("unchanged"), so the same copy run again goes on where it stopped; another
log or lineage under that ID is a conflict naming both (exit 2, as for
import) and nothing more is copied. It prints {"id","status","events",
"digest"} a session (status created or unchanged; events: its own).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if encoding != "" && encoding != handle.EncodingRaw && encoding != handle.EncodingZstd {
				return usageErrorf("--encoding %q: want raw or zstd", encoding)
			}
			return a.runCopy(cmd.Context(), args[0], args[1], ids, encoding)
		},
	}
	cmd.Flags().StringSliceVar(&ids, "id", nil, "copy only this `SESSION` of SRC (repeatable)")
	cmd.Flags().StringVar(&encoding, "encoding", "", "store the copies as `raw|zstd` (default: each session's own)")
	return cmd
}

func (a *app) runCopy(ctx context.Context, srcURL, dstURL string, ids []string, encoding string) error {
	src, closeSrc, err := a.openStoreURL(ctx, srcURL, storeurl.Existing())
	if err != nil {
		return err
	}
	defer closeSrc()
	for i, name := range ids {
		info, err := src.Resolve(ctx, name)
		if err != nil && !namedDamaged(info, err) { // the copy says what is wrong with it
			return a.nameError(name, "SRC "+srcURL, err)
		}
		ids[i] = info.ID
	}
	dst, closeDst, err := a.openStoreURL(ctx, dstURL)
	if err != nil {
		return err
	}
	defer closeDst()
	var opts []transfer.Option
	if len(ids) > 0 {
		opts = append(opts, transfer.IDs(ids...))
	}
	if encoding != "" {
		opts = append(opts, transfer.WithEncoding(encoding))
	}
	for res, err := range transfer.Copy(ctx, src, dst, opts...) {
		if err != nil {
			return err
		}
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	}
	return nil
}
