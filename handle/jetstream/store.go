package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// ErrNotDurable: a stream on which an acknowledged append could be lost
// (memory storage, asynchronous persistence), or, under
// WithStrictDurability, one whose durability depends on a server setting
// the client cannot see.
var ErrNotDurable = errors.New("jetstream: stream does not keep acknowledged writes")

// ErrStream: the stream exists but lacks a setting the store needs
// (atomic publish, direct get, rollups).
var ErrStream = errors.New("jetstream: stream not usable as a session store")

// ErrReplicas: the replicas asked for (WithReplicas, ?replicas= in a store
// URL) cannot be had: the cluster has too few JetStream servers to place
// them (a single server has one), or the store's stream or a bucket exists
// with another count. Never a silent single replica.
var ErrReplicas = errors.New("jetstream: the replicas asked for cannot be placed")

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// headerRoom is what New leaves of max_payload for a message's headers.
const headerRoom = 1024

// Store keeps sessions on a JetStream stream (see the package doc for the
// layout). Its handle.Store methods are handle's store core (NewStore) over
// the stream (engine.go). It is safe for concurrent use.
type Store struct {
	*core.Store

	js     natsjs.JetStream
	api    string // the JetStream API's subject prefix ($JS.API.)
	stream natsjs.Stream
	name   string // the stream
	subj   string // subject prefix: <prefix>.s.
	leases natsjs.KeyValue
	cfg    config
	enc    *eventlog.Encoder
	maxMsg int

	read  atomic.Int64 // payload bytes fetched, for tests and benchmarks
	looks atomic.Int64 // sessions an index answer checked against their logs, for tests

	keys *sealing.Keys // the keyrings of sealed sessions (sealed.go)

	derivedMu sync.Mutex
	derived   natsjs.KeyValue // created on first use

	ixMu   sync.Mutex      // held while the index is built
	ixKV   natsjs.KeyValue // the session index (index.go), opened on first use
	ixStMu sync.Mutex
	ixSt   natsjs.Stream // its stream (ixPurge)
	// ixScan: a read-only store found no index at New; the store core
	// answers from the stream (engine.Index is nil).
	ixScan bool

	// pubOnce is one try of a publish (publishOnce), leaseUpdate one of a
	// lease's write (the bucket's Update); tests wrap them.
	pubOnce     func(context.Context, []*nats.Msg) (uint64, error)
	leaseUpdate func(ctx context.Context, key string, value []byte, rev uint64) (uint64, error)
	healing     atomic.Bool // a connection check is running (see heal)
	watch       *connWatch  // ends the tries in flight when the connection moves
	closeFn     func()      // drains the connection OpenURL dialled
}

var (
	_ handle.Store          = (*Store)(nil)
	_ handle.Shredder       = (*Store)(nil)
	_ handle.Rekeyer        = (*Store)(nil)
	_ handle.SealedExporter = (*Store)(nil)
)

// New returns the store on js named by WithPrefix, creating its stream
// and lease bucket if they are missing. It refuses (ErrStream) a stream
// without atomic publish, direct get or rollups, and (ErrNotDurable) one
// whose acknowledgements do not mean durable; see docs/distributed.md.
//
// The store watches js's connection until Close: a request in flight when
// the connection leaves its server, or when the stream or a bucket (leases,
// index) elects a new leader, is retried at once. How soon the connection
// notices a server that stopped answering is its own options' (OpenURL
// sets them, see WithPing); on a replicated stream New warns, through the
// logger, about a connection that would take longer than a second.
func New(ctx context.Context, js natsjs.JetStream, opts ...Option) (_ *Store, err error) {
	cfg := newConfig(opts)
	if !prefixRE.MatchString(cfg.prefix) {
		return nil, fmt.Errorf("jetstream: prefix %q: want letters, digits, '_' or '-'", cfg.prefix)
	}
	if cfg.replicas < 1 || cfg.replicas > 5 {
		return nil, fmt.Errorf("%w: %d replicas: JetStream keeps 1 to 5", ErrReplicas, cfg.replicas)
	}
	s := &Store{js: js, api: apiPrefix(js.Options()), name: cfg.prefix, subj: cfg.prefix + ".s.", cfg: cfg,
		enc: eventlog.NewEncoder(cfg.hc.PackTypes), keys: sealing.NewKeys(cfg.hc.Identities)}
	// The store core gives every handle the store's settings, so they
	// are handle's options too.
	s.Store = core.NewStore(engine{s}, func(c *handle.Config) { *c = cfg.hc })
	s.pubOnce = s.publishOnce
	s.watch = watchConn(js.Conn())
	defer func() {
		if err != nil {
			s.watch.close()
		}
	}()
	st, err := s.openStream(ctx, s.name, func() natsjs.StreamConfig {
		return natsjs.StreamConfig{
			Name:               s.name,
			Description:        "sessionlog sessions: one subject per session (docs/distributed.md)",
			Subjects:           []string{s.subj + "*"},
			Storage:            natsjs.FileStorage,
			Replicas:           cfg.replicas,
			AllowAtomicPublish: true,
			AllowDirect:        true,
			AllowRollup:        true,
		}
	})
	if err != nil {
		return nil, err
	}
	s.stream = st
	replicas := st.CachedInfo().Config.Replicas
	if o := js.Conn().Opts; replicas > 1 && o.PingInterval*time.Duration(o.MaxPingsOut+1) > time.Second {
		s.cfg.hc.Logger.Warn("the connection takes more than a second to notice a server that stopped answering: writers on it wait that long; see WithPing and docs/distributed.md",
			"ping_interval", o.PingInterval, "max_pings_outstanding", o.MaxPingsOut)
	}
	if replicas > 1 && s.cfg.leaseTTL < MinReplicatedLeaseTTL {
		s.cfg.leaseTTL = MinReplicatedLeaseTTL
	}
	if err := s.checkStream(st.CachedInfo().Config); err != nil {
		return nil, err
	}
	s.maxMsg = cfg.maxMsg
	if s.maxMsg <= 0 {
		s.maxMsg = int(js.Conn().MaxPayload()) - headerRoom
	}
	if m := int(st.CachedInfo().Config.MaxMsgSize); m > 0 && m-headerRoom < s.maxMsg {
		s.maxMsg = m - headerRoom
	}
	if s.maxMsg < 64 {
		return nil, fmt.Errorf("jetstream: messages of %d bytes are too small", s.maxMsg)
	}
	if !cfg.noLease {
		s.leases, err = s.bucket(ctx, cfg.prefix+"_leases", "sessionlog writer leases", replicas)
		switch {
		case cfg.readOnly && errors.Is(err, natsjs.ErrBucketNotFound):
			s.leases = nil // no writer ever held a lease
		case err != nil:
			return nil, err
		default:
			s.leaseUpdate = s.leases.Update
		}
	}
	if cfg.readOnly {
		// Without an index whole, queries read the stream (engine.Index).
		if _, err := s.ix(ctx); errors.Is(err, ErrNoIndex) {
			s.ixScan = true
			s.cfg.hc.Logger.Info("read-only store without a session index: queries read every session", "bucket", s.ixBucket())
		} else if err != nil {
			return nil, err
		}
	}
	if replicas > 1 {
		if err := s.watch.leaders(s.name, "KV_"+cfg.prefix+"_leases", "KV_"+s.ixBucket()); err != nil {
			return nil, fmt.Errorf("jetstream: watching leader elections: %w", err)
		}
	}
	return s, nil
}

// apiPrefix is the subject prefix of js's JetStream API.
func apiPrefix(o natsjs.JetStreamOptions) string {
	switch {
	case o.APIPrefix != "" && strings.HasSuffix(o.APIPrefix, "."):
		return o.APIPrefix
	case o.APIPrefix != "":
		return o.APIPrefix + "."
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	}
	return "$JS.API."
}

// openStream returns stream name, creating it from want() if it is
// missing, and checks that it has the replicas asked for.
func (s *Store) openStream(ctx context.Context, name string, want func() natsjs.StreamConfig) (natsjs.Stream, error) {
	var st natsjs.Stream
	err := s.do(ctx, "stream "+name, func(ctx context.Context) error {
		var err error
		st, err = s.js.Stream(ctx, name)
		if errors.Is(err, natsjs.ErrStreamNotFound) && !s.cfg.readOnly {
			st, err = s.js.CreateStream(ctx, want())
		}
		return err
	})
	if err != nil {
		return nil, s.placementError("stream "+name, s.cfg.replicas, err)
	}
	if got := st.CachedInfo().Config.Replicas; s.cfg.replicaSet && got != s.cfg.replicas {
		return nil, fmt.Errorf("%w: stream %s exists with %d replica(s), %d asked for (change the stream, e.g. `nats stream edit %s --replicas %d`, or ask for none)",
			ErrReplicas, name, got, s.cfg.replicas, name, s.cfg.replicas)
	}
	return st, nil
}

// bucket returns KV bucket name, creating it with replicas if it is
// missing, and checks that it has the replicas asked for.
func (s *Store) bucket(ctx context.Context, name, description string, replicas int) (natsjs.KeyValue, error) {
	var kv natsjs.KeyValue
	var status natsjs.KeyValueStatus
	err := s.do(ctx, "bucket "+name, func(ctx context.Context) error {
		var err error
		kv, err = s.js.KeyValue(ctx, name)
		if errors.Is(err, natsjs.ErrBucketNotFound) && !s.cfg.readOnly {
			kv, err = s.js.CreateKeyValue(ctx, natsjs.KeyValueConfig{Bucket: name, Storage: natsjs.FileStorage,
				Replicas: replicas, Description: description})
		}
		if err == nil {
			status, err = kv.Status(ctx)
		}
		return err
	})
	if err != nil {
		return nil, s.placementError("bucket "+name, replicas, err)
	}
	if bs, ok := status.(*natsjs.KeyValueBucketStatus); ok && s.cfg.replicaSet {
		if got := bs.StreamInfo().Config.Replicas; got != s.cfg.replicas {
			return nil, fmt.Errorf("%w: bucket %s exists with %d replica(s), %d asked for (change it, e.g. `nats stream edit KV_%s --replicas %d`, or ask for none)",
				ErrReplicas, name, got, s.cfg.replicas, name, s.cfg.replicas)
		}
	}
	return kv, nil
}

// placementError says so when err is the cluster refusing the replicas.
func (s *Store) placementError(what string, replicas int, err error) error {
	var ae *natsjs.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode {
		case 10005, 10023, 10074: // no suitable peers; insufficient resources; not clustered
			return fmt.Errorf("%w: %s with %d replicas: %s (each replica needs its own JetStream server)", ErrReplicas, what, replicas, ae.Description)
		}
	}
	return fmt.Errorf("jetstream: %s: %w", what, err)
}

// checkStream refuses a stream the store cannot use, and says what an
// acknowledgement is worth on it.
func (s *Store) checkStream(c natsjs.StreamConfig) error {
	switch {
	case !c.AllowAtomicPublish || !c.AllowDirect || !c.AllowRollup:
		return fmt.Errorf("%w: stream %s needs allow_atomic, allow_direct and allow_rollup_hdrs", ErrStream, c.Name)
	case c.Storage != natsjs.FileStorage:
		return fmt.Errorf("%w: stream %s keeps messages in memory", ErrNotDurable, c.Name)
	case c.PersistMode == natsjs.AsyncPersistMode:
		return fmt.Errorf("%w: stream %s acknowledges before persisting (persist_mode async)", ErrNotDurable, c.Name)
	case c.Replicas >= 3 || s.cfg.syncAlways:
		return nil
	case s.cfg.strict:
		return fmt.Errorf("%w: stream %s has %d replica(s) and the server is not declared to sync every write", ErrNotDurable, c.Name, c.Replicas)
	}
	s.cfg.hc.Logger.Warn("JetStream stream is NOT durable by sessionlog's contract: an acknowledged Flush survives a process kill but may be lost in a power cut, unless the server runs with jetstream.sync_interval: always (then pass WithSyncAlways) or the stream has 3 replicas; see docs/distributed.md",
		"stream", c.Name, "replicas", c.Replicas)
	return nil
}

// JetStream returns the JetStream context the store works on (and, through
// it, its connection).
func (s *Store) JetStream() natsjs.JetStream { return s.js }

// Stream returns the name of the store's stream.
func (s *Store) Stream() string { return s.name }

// Subject returns the subject holding session id.
func (s *Store) Subject(id string) string { return s.subj + id }

// path names a session in messages and errors.
func (s *Store) path(id string) string { return "nats:" + s.Subject(id) }

// create makes a new session, durable (acknowledged) when it returns, and
// a write handle on it. The header is published expecting an empty
// subject, so that of two Creates of one ID exactly one succeeds.
func (s *Store) create(ctx context.Context, ns core.NewSession) (core.Backend, core.HandleConfig, error) {
	hdr, err := s.newHeader(ns)
	if err != nil {
		return nil, core.HandleConfig{}, err
	}
	id := hdr.ID
	plan, err := s.plan(ns, hdr)
	if err != nil {
		return nil, core.HandleConfig{}, err
	}
	if _, err := s.lastMsg(ctx, s.Subject(id)); err == nil {
		return nil, core.HandleConfig{}, fmt.Errorf("%w: %s in stream %s", handle.ErrExists, id, s.name)
	} else if !errors.Is(err, natsjs.ErrMsgNotFound) {
		return nil, core.HandleConfig{}, fmt.Errorf("jetstream: create %s: %w", id, err)
	}
	line, sl, err := s.firstMessage(hdr, plan)
	if err != nil {
		return nil, core.HandleConfig{}, fmt.Errorf("jetstream: create %s: %w", id, err)
	}
	l, err := s.acquire(ctx, id)
	if err != nil {
		return nil, core.HandleConfig{}, err
	}
	if err := s.ixCreating(ctx, hdr, plan != nil); err != nil {
		l.release()
		return nil, core.HandleConfig{}, fmt.Errorf("jetstream: create %s: %w", id, err)
	}
	msg := &nats.Msg{Subject: s.Subject(id), Data: line, Header: nats.Header{}}
	ss, err := s.publish(ctx, []*nats.Msg{msg}, 0)
	if err != nil {
		l.release()
		if errors.Is(err, errConflict) {
			return nil, core.HandleConfig{}, fmt.Errorf("%w: %s in stream %s", handle.ErrExists, id, s.name)
		}
		return nil, core.HandleConfig{}, fmt.Errorf("jetstream: create %s: %w", id, err)
	}
	s.cfg.hc.Logger.Debug("session created", "id", id, "subject", msg.Subject, "sealed", plan != nil)
	b, hc := s.created(hdr, l, len(line), ss, false, sl, plan)
	return b, hc, nil
}

// openMode opens session id; see handle.Store. A write handle takes the
// session's lease (handle.ErrLocked while another writer holds it); both
// kinds read the whole log once, checking every row.
func (s *Store) openMode(ctx context.Context, id string, mode handle.Mode) (core.Backend, core.HandleConfig, error) {
	if _, err := s.head(ctx, id); err != nil {
		return nil, core.HandleConfig{}, err
	}
	var l *lease
	if mode == handle.ReadWrite {
		var err error
		if l, err = s.acquire(ctx, id); err != nil {
			return nil, core.HandleConfig{}, err
		}
		s.ixMarkDirty(ctx, id) // its close settles it
	}
	b, hc, err := s.open(ctx, id, mode == handle.ReadWrite, l, false)
	if err != nil {
		l.release()
		return nil, core.HandleConfig{}, err
	}
	return b, hc, nil
}

func (s *Store) notFound(id string, err error) error {
	if errors.Is(err, natsjs.ErrMsgNotFound) || errors.Is(err, errIncomplete) {
		return fmt.Errorf("%w: %s in stream %s", handle.ErrNotFound, id, s.name)
	}
	return fmt.Errorf("jetstream: %s: %w", s.path(id), err)
}

// head returns session id's first message (its header row) as the
// stream's leader holds it: handle.ErrNotFound when there is none, or
// while CreateFrom is still making the session.
func (s *Store) head(ctx context.Context, id string) (*natsjs.RawStreamMsg, error) {
	first, err := s.firstMsg(ctx, s.Subject(id))
	if err == nil && incomplete(first) {
		err = errIncomplete
	}
	if err != nil {
		return nil, s.notFound(id, err)
	}
	return first, nil
}

// open reads session id's whole log, checking every row. It starts at the
// first message the leader knows: a replica that has not yet applied a
// rollup (Detach) or a CreateFrom's last purge still holds older messages
// before it.
//
// It returns the session's backend and what makes its handle.
func (s *Store) open(ctx context.Context, id string, writer bool, l *lease, unredacted bool) (*jsBackend, core.HandleConfig, error) {
	path := s.path(id)
	first, err := s.head(ctx, id)
	if err != nil {
		return nil, core.HandleConfig{}, err
	}
	sl, err := s.sniff(id, first.Data)
	if err != nil {
		return nil, core.HandleConfig{}, err
	}
	if sl != nil && len(sl.head.Envelopes) > 0 {
		if _, err := sl.kr.Key(sl.head.Envelopes[0].Key); err != nil {
			s.rescan(ctx, id)
		}
	}
	src := s.newMsgReader(ctx, s.Subject(id), first.Sequence, 0)
	defer src.close()
	r := newLogReader(src, sl, path, 0, 0, 0)
	hdr, err := r.Header()
	if sl != nil && err != nil {
		err = fmt.Errorf("jetstream: open %s: %w", path, sealing.NoKey(err, path))
	}
	if err == nil && hdr.ID != id {
		err = &eventlog.CorruptError{Path: path, Seq: -1, Reason: fmt.Sprintf("header id %s does not match the subject", hdr.ID),
			Fix: "the subject holds another session than its name says"}
	}
	for rows := 1; err == nil && r.SkipRow(); rows++ {
		if rows%4096 == 0 {
			err = ctx.Err()
		}
	}
	// A failed fetch is what the reader saw end early: its verdict on
	// the bytes (a missing header, a torn tail) is not about the log.
	switch {
	case len(src.refs) == 0 || errors.Is(src.err, errIncomplete):
		return nil, core.HandleConfig{}, s.notFound(id, natsjs.ErrMsgNotFound) // deleted meanwhile
	case src.err != nil:
		return nil, core.HandleConfig{}, fmt.Errorf("jetstream: open %s: %w", path, src.err)
	case err == nil:
		err = r.Err()
	}
	if err != nil {
		return nil, core.HandleConfig{}, err
	}
	b := s.newBackend(id, writer, l)
	b.unredacted = unredacted
	b.index, b.last, b.size = src.refs, src.last, r.End()
	if sl != nil {
		b.sealed = sl
		if writer {
			// A writer seals under the newest key, which it must hold (a
			// rotation may have given it to other recipients).
			sr := r.(*seal.Reader)
			envs := slices.Clone(sr.Envelopes())
			b.envs = envs
			k, err := sl.kr.Key(sealing.Newest(envs))
			if err != nil {
				return nil, core.HandleConfig{}, fmt.Errorf("jetstream: open %s for writing: %w", path, sealing.NoKey(err, path))
			}
			kid, used := sr.KeyUse()
			if kid != k.ID() {
				used = 0 // the key was rotated to after the last record
			}
			b.sealer = seal.ResumeSealer(id, seal.Raw, k, used)
		}
	}
	t := r.Torn()
	if t != nil {
		b.torn, b.cutTorn, b.size = t, writer, t.Offset
		s.cfg.hc.Logger.Info("torn tail found", "path", path, "offset", t.Offset, "bytes", t.Bytes)
	}
	_, hc := s.handle(b, hdr, r.NextSeq(), t)
	return b, hc, nil
}

// stat describes session id from its first and last messages; its cost
// does not grow with the log.
func (s *Store) stat(ctx context.Context, id string) (handle.Info, error) {
	subj := s.Subject(id)
	first, err := s.head(ctx, id)
	if err != nil {
		return handle.Info{}, err
	}
	last, err := s.lastMsg(ctx, subj)
	if err != nil {
		return handle.Info{}, s.notFound(id, err)
	}
	hdr, sl, err := s.headerOf(id, first.Data)
	if errors.Is(err, seal.ErrNoKey) && s.rescan(ctx, id) {
		hdr, sl, err = s.headerOf(id, first.Data)
	}
	if err != nil {
		return handle.Info{}, err
	}
	info := handle.Info{ID: id, Path: s.path(id), Encoding: handle.EncodingRaw, Header: hdr,
		LastSeq: hdr.FirstSeq() - 1, Events: hdr.FirstSeq(), SizeBytes: int64(len(first.Data)), Sealed: sl != nil}
	if last.Sequence <= first.Sequence {
		return info, nil
	}
	off, _ := msgOffset(last.Header)
	info.SizeBytes = off + int64(len(last.Data))
	var e eventlog.Event
	var found bool
	if sl != nil {
		e, found, err = s.lastSealedEvent(ctx, subj, s.path(id), sl, first, last)
		if errors.Is(err, seal.ErrNoKey) && s.rescan(ctx, id) {
			// A key rotated to has its envelope among the rows.
			e, found, err = s.lastSealedEvent(ctx, subj, s.path(id), sl, first, last)
		}
	} else {
		e, found, err = s.lastEvent(ctx, subj, first.Sequence, last)
	}
	if err != nil {
		return handle.Info{}, fmt.Errorf("jetstream: stat %s: %w", s.path(id), err)
	}
	if found {
		info.LastSeq, info.LastType, info.LastTime, info.Events = e.Seq, e.Type, e.Time, e.Seq+1
	}
	return info, nil
}

// lastEvent finds the last complete row of a subject from its last
// message back: more than one message is read only when the last holds no
// complete row (a row larger than a message, a torn tail).
func (s *Store) lastEvent(ctx context.Context, subj string, headerSS uint64, last *natsjs.RawStreamMsg) (eventlog.Event, bool, error) {
	tail := last.Data
	for m := last; ; {
		e, found, err := logfile.LastEvent(bytes.NewReader(tail), int64(len(tail)), 0)
		if err != nil || found {
			return e, found, err
		}
		if len(tail) > eventlog.MaxRowSize+s.maxMsg {
			return e, false, nil
		}
		at, _ := msgOffset(m.Header)
		prev, err := s.before(ctx, subj, m.Sequence, at)
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			return eventlog.Event{}, false, nil
		}
		if err != nil || prev.Sequence <= headerSS {
			return eventlog.Event{}, false, err
		}
		tail = slices.Concat(prev.Data, tail)
		m = prev
	}
}

// ids returns the IDs of the sessions on the stream.
func (s *Store) ids(ctx context.Context) ([]string, error) {
	var info *natsjs.StreamInfo
	err := s.do(ctx, "list "+s.name, func(ctx context.Context) error {
		var err error
		info, err = s.stream.Info(ctx, natsjs.WithSubjectFilter(s.subj+"*"))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jetstream: list stream %s: %w", s.name, err)
	}
	var ids []string
	for subj := range info.State.Subjects {
		if id, ok := strings.CutPrefix(subj, s.subj); ok && eventlog.ValidID(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// readOnlyErr is the error of a write a read-only store refuses.
func readOnlyErr(what string) error {
	return fmt.Errorf("jetstream: %s: %w (the store is read-only)", what, handle.ErrReadOnly)
}

// remove purges session id's subject, then drops its derived data and
// its index entry.
func (s *Store) remove(ctx context.Context, id string) error {
	var hdr *eventlog.Header
	if first, err := s.firstMsg(ctx, s.Subject(id)); err == nil {
		if h, _, err := s.headerOf(id, first.Data); err == nil {
			hdr = &h
		}
	}
	if err := s.purge(ctx, natsjs.WithPurgeSubject(s.Subject(id))); err != nil {
		return fmt.Errorf("jetstream: delete %s: %w", s.path(id), err)
	}
	s.dropDerived(ctx, id)
	s.ixRemove(ctx, id, hdr)
	s.keys.Forget(id)
	s.cfg.hc.Logger.Debug("session deleted", "id", id)
	return nil
}

// rewrite replaces session id's subject by its whole log under hdr holding
// events, in one atomic batch that rolls up the subject (Detach). The
// batch expects the subject's last message as the leader holds it before
// events are read: an append after that fails it. A log that does not fit
// one atomic batch is refused.
func (s *Store) rewrite(ctx context.Context, id string, hdr eventlog.Header, events iter.Seq2[eventlog.Event, error]) error {
	subj := s.Subject(id)
	last, err := s.tailRef(ctx, subj)
	if err != nil {
		return fmt.Errorf("jetstream: detach %s: %w", id, err)
	}
	plan, err := s.rewritePlan(ctx, id, hdr)
	if err != nil {
		return fmt.Errorf("jetstream: detach %s: %w", id, err)
	}
	line, _, err := s.firstMessage(hdr, plan)
	if err != nil {
		return fmt.Errorf("jetstream: detach %s: %w", id, err)
	}
	var evs []eventlog.Event
	for e, err := range events {
		if err != nil {
			return fmt.Errorf("jetstream: detach %s: %w", id, err)
		}
		evs = append(evs, e)
	}
	rows := s.enc.AppendRows(nil, evs)
	var recs []sealing.Record
	if plan != nil {
		if rows, recs, err = sealing.SealRows(plan.Sealer, nil, rows, nil); err != nil {
			return fmt.Errorf("jetstream: detach %s: %w", id, err)
		}
	}
	msgs := append([]*nats.Msg{{Subject: subj, Data: line, Header: nats.Header{}}},
		s.split(subj, rows, int64(len(line)), recs)...)
	var was *eventlog.Parent
	if first, err := s.firstMsg(ctx, subj); err == nil {
		if old, _, err := s.headerOf(id, first.Data); err == nil {
			was = old.Parent
		}
	}
	s.ixMarkDirty(ctx, id)
	defer s.ixSettle(ctx, id)
	if err := s.replace(ctx, subj, last.ss, msgs); err != nil {
		return fmt.Errorf("jetstream: detach %s: %w", id, err)
	}
	s.dropDerived(ctx, id)
	if was != nil && (hdr.Parent == nil || hdr.Parent.ID != was.ID) {
		s.ixDropKey(ctx, "p."+was.ID+"."+id) // the entry itself is described again
	}
	return nil
}

// replace publishes msgs as one atomic batch whose first message rolls up
// (purges) everything before it on subj; subj's last message must be
// stream seq last.
func (s *Store) replace(ctx context.Context, subj string, last uint64, msgs []*nats.Msg) error {
	if len(msgs) > s.cfg.maxBatch {
		return fmt.Errorf("%d messages do not fit one atomic batch of %d", len(msgs), s.cfg.maxBatch)
	}
	msgs[0].Header.Set(natsjs.MsgRollup, natsjs.MsgRollupSubject)
	_, err := s.publish(ctx, msgs, last)
	return err
}

// deleteMsg deletes the message at stream seq ss (a torn tail's cut). A
// retry finding it gone after a try whose outcome was unknown succeeds.
func (s *Store) deleteMsg(ctx context.Context, ss uint64) error {
	unknown := false
	return s.do(ctx, "delete a message of "+s.name, func(ctx context.Context) error {
		err := s.stream.DeleteMsg(ctx, ss)
		if err != nil && unknown && !s.transient(err) {
			if _, gerr := s.leaderGet(ctx, s.name, msgGetReq{Seq: ss}); errors.Is(gerr, natsjs.ErrMsgNotFound) {
				return nil
			}
		}
		unknown = unknown || s.transient(err)
		return err
	})
}

// purge purges the stream as opts say, through transient failures (a
// purge done twice is done once).
func (s *Store) purge(ctx context.Context, opts ...natsjs.StreamPurgeOpt) error {
	return s.do(ctx, "purge "+s.name, func(ctx context.Context) error { return s.stream.Purge(ctx, opts...) })
}
