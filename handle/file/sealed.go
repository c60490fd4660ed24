package file

import (
	"os"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"

	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"

	"filippo.io/age"
	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// Sealed sessions (docs/format.md §11, "Sealed sessions"): a session's
// file holds its log sealed with a random data key, wrapped for age
// recipients in key records of the same file (package seal). The file
// store reads and writes them through the same paths as clear logs: a
// log file is told sealed by its first bytes when it is opened (sniff),
// and every reader, writer, tail read and whole-file rewrite of it goes
// through the sealed layout; derived data of a sealed session is sealed
// too (see GetDerived). Nothing of a sealed session's content is written
// anywhere in clear.
//
// Keys. A store opens envelopes with the identities it was given
// (WithIdentities), and keeps the data keys it opened — and those of the
// sessions it created — per session file, named by the file's
// fingerprint (seal.Head.Fingerprint): the process that creates a sealed
// session writes and reads it without an identity, and no envelope is
// opened twice (a passphrase's costs a second).

// Framing checks the framing of sealed session id's log — its clear
// header and every record's frame — without opening a record, so without
// a key (handle.SealedExporter); nil for a clear session.
func (s *Store) Framing(ctx context.Context, id string) (*seal.Framing, error) {
	loc, err := s.existing(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.framingAt(ctx, &loc)
}

// framingAt checks the framing of the log at loc (nil for a clear one).
func (s *Store) framingAt(ctx context.Context, loc *location) (*seal.Framing, error) {
	f, err := s.openLog(ctx, loc, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if loc.sealed == nil {
		return nil, nil
	}
	fr, err := seal.Check(ctxReader{ctx: ctx, r: f}, loc.sealed.layout(), loc.path)
	if err != nil {
		return nil, err
	}
	return &fr, nil
}

// SealingOf returns how session id is sealed, or nil for a clear session.
// The store must hold its newest data key (its identities open it).
func (s *Store) SealingOf(ctx context.Context, id string) (*handle.Sealing, error) {
	loc, err := s.existing(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.sealingAt(ctx, loc)
}

func (s *Store) sealingAt(ctx context.Context, loc location) (*handle.Sealing, error) {
	h, err := s.readHeaderAt(loc)
	if err != nil {
		return nil, err
	}
	plan, err := s.rewritePlan(ctx, loc, h, loc.enc)
	if err != nil || plan == nil {
		return nil, err
	}
	return &handle.Sealing{ID: h.ID, Envelopes: plan.Head.Envelopes, Key: plan.Key}, nil
}

// SealingOfPath is SealingOf for the log file at path, anywhere (an
// export of a sealed session, say).
func (s *Store) SealingOfPath(ctx context.Context, path string) (*handle.Sealing, error) {
	loc, _, err := s.pathLocation(path)
	if err != nil {
		return nil, err
	}
	return s.sealingAt(ctx, loc)
}

// sealedFile is what opening a sealed log file found: its head and the
// keyring of its session.
type sealedFile struct {
	head seal.Head
	kr   *seal.Keyring
}

// layout is the file's sealed layout.
func (sf *sealedFile) layout() seal.Encoding { return sf.head.Encoding }

// sniff tells whether the log file f at loc is sealed, and if so sets
// loc.sealed. A sealed layout that does not match the file's name (zstd
// frames in a .jsonl) is corruption.
func (s *Store) sniff(ctx context.Context, loc *location, f afero.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("handle: stat %q: %w", loc.path, err)
	}
	h, sealed, err := seal.ReadHead(ctxReaderAt{ctx: ctx, r: f}, fi.Size(), loc.path)
	if err != nil || !sealed {
		return err
	}
	if (h.Encoding == seal.Zstd) != (loc.enc.z != nil) {
		return &eventlog.CorruptError{Path: loc.path, Offset: 0, Seq: -1,
			Reason: fmt.Sprintf("a sealed %s layout in a file named as %s", h.Encoding, loc.enc.name)}
	}
	kr := s.keys.For(h)
	if len(h.Envelopes) > 0 && len(s.cfg.Identities) > 0 {
		if _, err := kr.Key(h.Envelopes[0].Key); err != nil {
			// A recipient added later has its envelope after the rows it
			// opens: every key record of the file, read once (the keyring
			// keeps the keys).
			if fr, err := seal.Check(ctxReader{ctx: ctx, r: io.NewSectionReader(f, 0, fi.Size())}, h.Encoding, loc.path); err == nil {
				for _, e := range fr.Envelopes {
					kr.Add(e)
				}
			}
		}
	}
	loc.sealed = &sealedFile{head: h, kr: kr}
	return nil
}

// logReader reads a log file: an *eventlog.Reader for a clear log, a
// *seal.Reader for a sealed one (both check every row alike; offsets are
// the file's).
type logReader interface {
	core.RowReader
	Header() (eventlog.Header, error)
	SkipRow() bool
	Torn() *eventlog.TornTail
	End() int64
	Resume() (offset, nextSeq int64)
	LastFrame() (off, n int64)
	All() iter.Seq2[eventlog.Event, error]
}

var (
	_ logReader = (*eventlog.Reader)(nil)
	_ logReader = (*seal.Reader)(nil)
)

// readOpts says where a logReader starts: at the header, or (started) at
// a row or record boundary at file offset start whose first row holds
// next; events below from are checked, not returned.
type readOpts struct {
	start, next int64
	started     bool
	from        int64
}

// readAt is a readOpts that starts at a boundary.
func readAt(start, next, from int64) readOpts {
	return readOpts{start: start, next: next, started: true, from: from}
}

// reader returns a reader of the log at loc, whose bytes src holds (from
// o.start on when o.started), that ends with ctx's error once ctx is done.
func (loc location) reader(ctx context.Context, src io.Reader, o readOpts) logReader {
	src = ctxReader{ctx: ctx, r: src}
	if sf := loc.sealed; sf != nil {
		opts := []seal.Option{seal.WithPath(loc.path), seal.WithFrom(o.from), seal.WithCodec(loc.enc.z)}
		if o.started {
			opts = append(opts, seal.WithStart(o.start, o.next))
		}
		return seal.NewReader(src, sf.layout(), sf.kr, opts...)
	}
	opts := []eventlog.ReaderOption{eventlog.WithPath(loc.path), eventlog.WithFrom(o.from)}
	if o.started {
		opts = append(opts, eventlog.WithStart(o.start, o.next))
	}
	if loc.enc.z != nil {
		return eventlog.NewZstdReader(src, loc.enc.z, opts...)
	}
	return eventlog.NewReader(src, opts...)
}

// tail reads the header and last event of the log at loc, which src holds
// (size bytes); known, when not nil, tells a data frame the caller knows
// of (clear zstd, asked only when needed: see
// logfile.ReadZstdTailAfter).
func (loc location) tail(src io.ReaderAt, size int64, known func() zstdframe.Frame) (logfile.Tail, error) {
	if sf := loc.sealed; sf != nil {
		st, err := seal.ReadTail(src, size, sf.layout(), sf.kr, seal.WithPath(loc.path), seal.WithCodec(loc.enc.z))
		return logfile.Tail{Header: st.Header, Last: st.Last, Found: st.Found, HeaderEnd: st.HeaderEnd, End: st.End,
			LastFrame: zstdframe.Frame{Offset: st.LastFrame[0], Len: st.LastFrame[1]}, LastContent: st.LastContent}, err
	}
	if loc.enc.z != nil {
		return logfile.ReadZstdTailAfter(src, size, loc.enc.z, loc.path, known)
	}
	return logfile.ReadTail(src, size, loc.path)
}

// envelopesOf returns the key records a read of a sealed log met; nil
// for a clear log.
func envelopesOf(r logReader) []seal.Envelope {
	if sr, ok := r.(*seal.Reader); ok {
		return slices.Clone(sr.Envelopes())
	}
	return nil
}

// readEnvelopes reads the key records at keys ({offset, length} each) of
// the sealed log f at loc, and adds them to its keyring: what an open
// that trusts the checked record needs to read from a record boundary
// past them.
func (loc location) readEnvelopes(f io.ReaderAt, keys [][2]int64) ([]seal.Envelope, error) {
	var out []seal.Envelope
	for _, k := range keys {
		env, err := seal.ReadEnvelope(f, loc.sealed.layout(), k[0], k[1], loc.path)
		if err != nil {
			return nil, err
		}
		loc.sealed.kr.Add(env)
		out = append(out, env)
	}
	return out, nil
}

// sealerFor returns the Sealer a writer appends to the sealed log at loc
// with: under the newest data key of the file (envs are its key records),
// which the keyring must hold — a writer that cannot open it must not
// seal rows with an older one (a rotation gave them to other recipients).
// sealed bounds the records the key sealed so far (a record is at least
// minSealedRecord bytes): for its limit of records (seal.MaxRecordsPerKey).
func (loc location) sealerFor(envs []seal.Envelope, size int64) (*seal.Sealer, error) {
	newest := uint32(0)
	for _, e := range envs {
		newest = max(newest, e.Key)
	}
	k, err := loc.sealed.kr.Key(newest)
	if err != nil {
		var ke *seal.KeyError
		if errors.As(err, &ke) {
			ke.Path = loc.path
		}
		return nil, fmt.Errorf("handle: open %q for writing: %w", loc.path, err)
	}
	return seal.ResumeSealer(loc.sealed.kr.Session(), loc.sealed.layout(), k, uint64(size/minSealedRecord)), nil
}

// minSealedRecord is the fewest bytes a sealed record takes (a zstd
// frame's: magic, size, key, nonce and tag).
const minSealedRecord = 8 + 4 + 12 + 16

// sealPlan is how a log file is written sealed (package sealing's plan,
// in the file's layout).
type sealPlan struct{ *sealing.Plan }

// layoutOf returns the sealed layout of an encoding.
func layoutOf(enc *encoding) seal.Encoding {
	if enc.z != nil {
		return seal.Zstd
	}
	return seal.Raw
}

// newSealPlan plans a new sealed session, whose header is hdr, in enc:
// a new data key 0 wrapped for rs.
func newSealPlan(hdr eventlog.Header, enc *encoding, rs []age.Recipient) (*sealPlan, error) {
	p, err := sealing.NewPlan(hdr, layoutOf(enc), rs)
	if err != nil {
		return nil, err
	}
	return &sealPlan{p}, nil
}

// sealPlanFrom plans a rewrite of the sealed session whose key records
// are envs (a full read's) and whose keyring is kr: the same key records,
// and every row sealed with the newest key, which kr must hold.
func sealPlanFrom(hdr eventlog.Header, enc *encoding, envs []seal.Envelope, kr *seal.Keyring, path string) (*sealPlan, error) {
	p, err := sealing.PlanFrom(hdr, layoutOf(enc), envs, kr, path)
	if err != nil {
		return nil, err
	}
	return &sealPlan{p}, nil
}

// planWith plans a file holding the key records envs, its rows sealed
// with key.
func planWith(hdr eventlog.Header, enc *encoding, envs []seal.Envelope, key *seal.DataKey) (*sealPlan, error) {
	p, err := sealing.PlanWith(hdr, layoutOf(enc), envs, key)
	if err != nil {
		return nil, err
	}
	return &sealPlan{p}, nil
}

// seal appends rows (whole rows; zstd: compressed by z into frames of
// zstdframe.Cut first) sealed to dst, and returns where the last
// sealed record starts in it.
func (p *sealPlan) seal(dst, rows []byte, z *eventlog.ZstdCodec, scratch *[]byte) ([]byte, int, error) {
	last := len(dst)
	if z == nil {
		// A raw record is one row: the last starts after the last '\n'
		// but one.
		out, err := p.Sealer.AppendRows(dst, rows)
		if err == nil && len(out) > last {
			last = len(out) - 1 - lastLineLen(out[last:len(out)-1])
		}
		return out, last, err
	}
	for rest := rows; len(rest) > 0; {
		n := zstdframe.Cut(rest)
		*scratch, _ = z.AppendFrames((*scratch)[:0], rest[:n])
		last = len(dst)
		var err error
		if dst, err = p.Sealer.AppendFrame(dst, *scratch); err != nil {
			return dst, last, err
		}
		rest = rest[n:]
	}
	return dst, last, nil
}

// lastLineLen returns the length of the last line of b (b without its
// final '\n').
func lastLineLen(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return len(b) - 1 - i
		}
	}
	return len(b)
}

// remember keeps the data key of the file p was written to in the
// store's keyring of it: the writer that made a sealed session reads it
// without an identity.
func (s *Store) remember(p *sealPlan) *sealedFile {
	return &sealedFile{head: p.Head, kr: s.keys.Remember(p.Plan)}
}

// sealFor returns the recipients a new session is sealed for, or nil for
// a clear one (sealing.Recipients): those the create asked (WithRecipients), else the
// store's; a fork of a sealed session is sealed whatever the options.
func (s *Store) sealFor(ns core.NewSession, parentSealed bool) ([]age.Recipient, error) {
	rs, err := sealing.Recipients(sealing.Ask{Sealed: ns.Sealed, SealFor: ns.SealFor, SealAs: ns.SealAs != nil},
		parentSealed, s.cfg.Recipients, s.cfg.Identities)
	if errors.Is(err, sealing.ErrNoRecipient) {
		return nil, fmt.Errorf("%w: %w", handle.ErrSealed, err)
	}
	return rs, err
}
