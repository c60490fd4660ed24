package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// Writer is what a Session records through: a write handle
// (handle.Handle is one).
type Writer interface {
	replay.Source
	AppendAt(ctx context.Context, expected int64, events ...eventlog.Event) (int64, error)
	Flush(ctx context.Context) error
}

// Session records a session's model calls as provider records, and gives
// back the conversation they hold. It is safe for concurrent use, but its
// model calls are one conversation: each response must answer the last
// request (a loop that calls models concurrently uses a session, and a
// Session, per conversation). Other writes through the same handle are
// caught up with, as a rollback is.
type Session struct {
	h   Writer
	cfg config

	mu   sync.Mutex
	proj *Projection
	next int64 // the next seq the projection has not applied
	// The clear conversation list of the last request, for the next
	// request's delta, and the clear body, to tell a retry; valid when
	// clearSeq is the projection's last request.
	clearSeq   int64
	clearItems []json.RawMessage
	clearBody  []byte
}

type config struct {
	keys     *Keys
	noEscrow bool
	red      *redact.Redactor
	codecs   []Codec
	now      func() time.Time
	log      *slog.Logger
	cache    replay.Cache
}

// Option configures a Session.
type Option func(*config)

// WithKeys sets the keys that seal the originals of secrets found in
// provider records, and open them again. Without it Open uses
// DefaultKeys.
func WithKeys(k *Keys) Option { return func(c *config) { c.keys = k } }

// WithoutEscrow stores provider records as they are, secrets in clear:
// for a store that is sealed, or whose handle does not redact.
func WithoutEscrow() Option { return func(c *config) { c.noEscrow = true } }

// WithRedactor sets the redactor whose detectors find the secrets to seal
// (default redact.New()); give it the patterns the store's own redactor
// has.
func WithRedactor(r *redact.Redactor) Option { return func(c *config) { c.red = r } }

// WithCodecs sets the wire formats recorded (default Codecs()); a request
// to an endpoint no codec matches passes through unrecorded.
func WithCodecs(cs ...Codec) Option { return func(c *config) { c.codecs = cs } }

// WithClock sets the clock for the records' times.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithLogger sets the logger (default: silent).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithCache lets replays start from stored states (handle stores are
// caches).
func WithCache(cache replay.Cache) Option { return func(c *config) { c.cache = cache } }

// Open returns a Session recording through the write handle h, caught up
// with its log.
func Open(ctx context.Context, h Writer, opts ...Option) (*Session, error) {
	cfg := config{now: time.Now, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.red == nil {
		cfg.red = redact.New()
	}
	if cfg.codecs == nil {
		cfg.codecs = Codecs()
	}
	if cfg.keys == nil && !cfg.noEscrow {
		k, err := DefaultKeys()
		if err != nil {
			return nil, err
		}
		cfg.keys = k
	}
	s := &Session{h: h, cfg: cfg, clearSeq: -1}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rebuild(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Session) replayOpts(upTo int64) []replay.Option {
	o := []replay.Option{replay.UpTo(upTo)}
	if s.cfg.cache != nil {
		o = append(o, replay.WithCache(s.cfg.cache))
	}
	return o
}

// rebuild replays the log into a fresh projection. Called with mu held.
func (s *Session) rebuild(ctx context.Context) error {
	p := NewProjection(s.cfg.codecs...)
	last := s.h.Seq()
	if _, err := replay.Replay(ctx, s.h, []projection.Projection{p}, s.replayOpts(last)...); err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	s.proj, s.next = p, last+1
	return nil
}

// catchUp applies what was written through the handle since the last
// event applied. Called with mu held.
func (s *Session) catchUp(ctx context.Context) error {
	last := s.h.Seq()
	if last < s.next {
		return nil
	}
	for e, err := range s.h.Read(ctx, s.next, last) {
		if err != nil {
			return fmt.Errorf("provider: catching up with the log: %w", err)
		}
		if e.Type == eventlog.TypeRollback {
			return s.rebuild(ctx)
		}
		if e.Type != eventlog.TypeCheckpoint {
			s.proj.Apply(e)
		}
		s.next = e.Seq + 1
	}
	return nil
}

// clear returns the clear list and body of the projection's last
// request, opening it when the cached one is another's. Called with mu
// held, caught up.
func (s *Session) clear() (items []json.RawMessage, body []byte, seq int64) {
	rs := s.proj.s.Request
	if rs == nil {
		return nil, nil, -1
	}
	if s.clearSeq == rs.Seq {
		return s.clearItems, s.clearBody, rs.Seq
	}
	req, err := openRequest(rs, s.opener())
	if err != nil {
		s.cfg.log.Warn("provider: the last request cannot be opened; the next one is stored whole", "seq", rs.Seq, "err", err)
		return nil, nil, rs.Seq
	}
	c, err := codecNamed(s.cfg.codecs, req.Provider, req.API)
	if err != nil {
		return nil, req.Body, rs.Seq
	}
	list, _ := getMember(req.Body, c.ListKey())
	items, _ = elements(list)
	s.clearSeq, s.clearItems, s.clearBody = rs.Seq, items, req.Body
	return items, req.Body, rs.Seq
}

func (s *Session) opener() func(string) ([]byte, error) {
	return func(text string) ([]byte, error) {
		if s.cfg.keys == nil {
			return nil, ErrNoKey
		}
		return s.cfg.keys.open(text)
	}
}

// escrow redacts data's secrets, sealing their originals (or leaves it
// as it is under WithoutEscrow).
func (s *Session) escrow(data []byte) ([]byte, error) {
	if s.cfg.noEscrow {
		return data, nil
	}
	out, _, err := s.cfg.red.Escrow(data, s.cfg.keys.seal)
	return out, err
}

// appendLocked appends events at the next seq and flushes them, catching
// up first. Called with mu held.
func (s *Session) appendLocked(ctx context.Context, evs []eventlog.Event) (int64, error) {
	last, err := s.h.AppendAt(ctx, s.next, evs...)
	if err != nil {
		return 0, fmt.Errorf("provider: %w", err)
	}
	if err := s.h.Flush(ctx); err != nil {
		return 0, fmt.Errorf("provider: %w", err)
	}
	// Apply what the log holds, read back: the handle may redact.
	if err := s.catchUp(ctx); err != nil {
		return 0, err
	}
	return last - int64(len(evs)-1), nil
}

// Request records a request (unless it repeats the last one, which has no
// complete response: a retry, or the request a resumed loop asks again),
// with the events its new items imply, durably, and returns its seq.
func (s *Session) Request(ctx context.Context, req Request) (int64, error) {
	c, err := codecNamed(s.cfg.codecs, req.Provider, req.API)
	if err != nil {
		return 0, err
	}
	body, err := compact(req.Body)
	if err != nil {
		return 0, fmt.Errorf("%w: the request body is not JSON: %w", ErrRecord, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUp(ctx); err != nil {
		return 0, err
	}
	prevItems, prevBody, prevSeq := s.clear()
	if prevSeq >= 0 && bytes.Equal(prevBody, body) && (s.proj.s.Response == nil || !s.responseComplete()) {
		return prevSeq, nil
	}
	now := s.cfg.now().UnixMilli()
	d := &Deriver{time: now, results: s.resultsLocked()}
	data, items, newFrom, err := s.requestData(c, req, body, prevItems, prevSeq)
	if err != nil {
		return 0, err
	}
	c.DeriveRequest(d, items[newFrom:])
	d.Add("step/start", object{})
	if d.err != nil {
		return 0, d.err
	}
	evs := append([]eventlog.Event{{Type: TypeRequest, Time: now, Data: data}}, d.events...)
	seq, err := s.appendLocked(ctx, evs)
	if err != nil {
		return 0, err
	}
	s.clearSeq, s.clearItems, s.clearBody = seq, items, body
	return seq, nil
}

// resultsLocked returns the tool call ids with a result since the last
// response (recorded as inputs), so that a request that carries them, or
// an input that repeats one, derives no second tool/result. Called with mu
// held, caught up.
func (s *Session) resultsLocked() map[string]bool {
	m := make(map[string]bool, len(s.proj.s.Results))
	for _, id := range s.proj.s.Results {
		m[id] = true
	}
	return m
}

func (s *Session) responseComplete() bool {
	r, err := decodeResponse(withoutRecord(s.proj.s.Response))
	return err == nil && r.Complete
}

// requestData builds a request record: the list's items that the previous
// request did not have, each escrowed on its own (so a later request can
// reuse them), then the rest of the body escrowed. It returns the record,
// the whole clear list and where its new items start.
func (s *Session) requestData(c Codec, req Request, body []byte, prev []json.RawMessage, prevSeq int64) (data []byte, items []json.RawMessage, newFrom int, err error) {
	rd := requestData{Provider: req.Provider, API: req.API, Method: req.Method, Path: req.Path, Header: req.Header, Body: body}
	list, ok := getMember(body, c.ListKey())
	if ok {
		items, _ = elements(list) // nil when not an array: stored whole
	}
	keep := 0
	for keep < len(items) && keep < len(prev) && bytes.Equal(items[keep], prev[keep]) {
		keep++
	}
	if items != nil {
		stored := make([]json.RawMessage, 0, len(items)-keep)
		whole := false
		for _, it := range items[keep:] {
			e, err := s.escrow(it)
			if err != nil {
				whole = true // an item that is no object: escrow the body whole
				break
			}
			stored = append(stored, e)
		}
		if !whole {
			if rd.Body, err = setMember(body, c.ListKey(), joinArray(stored)); err != nil {
				return nil, nil, 0, fmt.Errorf("%w: %w", ErrRecord, err)
			}
			if keep > 0 {
				rd.Base = &base{Seq: prevSeq, Keep: keep}
			}
		}
	}
	raw, err := marshal(rd)
	if err != nil {
		return nil, nil, 0, err
	}
	if data, err = s.escrow(raw); err != nil {
		return nil, nil, 0, err
	}
	return data, items, keep, nil
}

// Response records the response to the request at seq req.Request, with
// the events a complete one implies (its messages, reasoning, every tool
// call and usage, the step's end and, when the model answered, the
// turn's), in one batch, durably; it returns its seq.
func (s *Session) Response(ctx context.Context, resp Response) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUp(ctx); err != nil {
		return 0, err
	}
	rs := s.proj.s.Request
	if rs == nil || rs.Seq != resp.Request {
		return 0, fmt.Errorf("%w: a response to seq %d, which is not the last request of the live branch", ErrRecord, resp.Request)
	}
	d, err := decodeRequest(withoutRecord(rs.Data))
	if err != nil {
		return 0, err
	}
	c, err := codecNamed(s.cfg.codecs, d.Provider, d.API)
	if err != nil {
		return 0, err
	}
	if resp.Body != nil {
		if resp.Body, err = compact(resp.Body); err != nil {
			// A body that is not JSON (an HTML error page) is kept as a
			// JSON string.
			resp.Body, _ = marshal(string(resp.Body))
		}
	}
	resp.Complete = c.Complete(&resp)
	now := s.cfg.now().UnixMilli()
	der := &Deriver{time: now}
	if resp.Complete {
		calls, stop := c.DeriveResponse(der, &resp)
		der.Add("step/end", withOpt(object{}, "stopReason", stop, stop != ""))
		if c.Final(calls, stop) {
			der.Add("turn/end", withOpt(object{"kind": "completed"}, "reason", stop, stop != ""))
		}
	}
	if der.err != nil {
		return 0, der.err
	}
	raw, err := marshal(resp)
	if err != nil {
		return 0, err
	}
	data, err := s.escrow(raw)
	if err != nil {
		return 0, err
	}
	if resp.Streamed() && !s.cfg.noEscrow {
		// A secret the stream sent in pieces is in no one piece: find
		// it in the pieces joined and escrow each piece whole.
		if at := splitSecrets(s.cfg.red, c.Deltas(&resp), resp.Stream); len(at) > 0 {
			if data, err = redact.EscrowAt(data, at, s.cfg.keys.seal); err != nil {
				return 0, err
			}
		}
	}
	return s.appendLocked(ctx, append([]eventlog.Event{{Type: TypeResponse, Time: now, Data: data}}, der.events...))
}

// Input records content the agent adds before the next request (a tool's
// result, in the provider's shape), with the events it implies, durably,
// and returns its seq. Record each tool result as soon as the tool has
// run: a resumed loop then sends it as it is, and runs only the calls
// that have none.
func (s *Session) Input(ctx context.Context, providerName, api string, content json.RawMessage) (int64, error) {
	c, err := codecNamed(s.cfg.codecs, providerName, api)
	if err != nil {
		return 0, err
	}
	cc, err := compact(content)
	if err != nil {
		return 0, fmt.Errorf("%w: input content is not JSON: %w", ErrRecord, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUp(ctx); err != nil {
		return 0, err
	}
	now := s.cfg.now().UnixMilli()
	d := &Deriver{time: now, results: s.resultsLocked()}
	c.DeriveInput(d, cc)
	if d.err != nil {
		return 0, d.err
	}
	raw, err := marshal(Input{Provider: providerName, API: api, Content: cc})
	if err != nil {
		return 0, err
	}
	data, err := s.escrow(raw)
	if err != nil {
		return 0, err
	}
	return s.appendLocked(ctx, append([]eventlog.Event{{Type: TypeInput, Time: now, Data: data}}, d.events...))
}

// BeginTool records, durably, that the tool call id is about to run
// (tool/approval, approved by "run"). Call it before a tool whose effect
// cannot be repeated safely: after a crash, a call with no such mark never
// started and is run; a call with the mark and no result may have run
// (docs/format.md §8, "Resume").
func (s *Session) BeginTool(ctx context.Context, id string) (int64, error) {
	data, err := marshal(object{"id": id, "decision": "approved", "by": "run"})
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUp(ctx); err != nil {
		return 0, err
	}
	return s.appendLocked(ctx, []eventlog.Event{{Type: "tool/approval", Time: s.cfg.now().UnixMilli(), Data: data}})
}

// Keys returns the keys the Session seals and opens with (nil under
// WithoutEscrow with no WithKeys).
func (s *Session) Keys() *Keys { return s.cfg.keys }

// Conversation returns the provider conversation at the head of the live
// branch, opened with the Session's keys.
func (s *Session) Conversation(ctx context.Context) (Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUp(ctx); err != nil {
		return Conversation{}, err
	}
	c, err := s.proj.Conversation(s.cfg.keys)
	c.Seq = s.next - 1
	return c, err
}

// At returns the provider conversation at seq of the live branch.
func (s *Session) At(ctx context.Context, seq int64) (Conversation, error) {
	return At(ctx, s.h, seq, s.cfg.keys, s.replayOpts(seq)[1:]...)
}

// Middleware returns an HTTP middleware that records every call to an
// endpoint a codec matches: the request before it is sent, the response
// before the SDK reads it (a JSON body is read whole first; a stream is
// recorded when it ends or is closed). Its type is the one
// anthropic-sdk-go's and openai-go's option.WithMiddleware take. A
// recording that fails fails the call: the loop must not act on what the
// log does not hold.
func (s *Session) Middleware() func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		c := codecFor(s.cfg.codecs, req.URL.Path)
		if c == nil || req.Body == nil || req.Method != http.MethodPost {
			return next(req)
		}
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		ctx := req.Context()
		seq, err := s.Request(ctx, Request{
			Provider: c.Provider(), API: c.API(), Method: req.Method, Path: req.URL.Path,
			Header: keptHeaders(req.Header, keptRequestHeaders), Body: body,
		})
		if err != nil {
			return nil, err
		}
		resp, err := next(req)
		if err != nil {
			return nil, err
		}
		rec := Response{Request: seq, Status: resp.StatusCode, Header: keptHeaders(resp.Header, keptResponseHeaders)}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body = &streamBody{s: s, ctx: ctx, rc: resp.Body, rec: rec}
			return resp, nil
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		rec.Body = b
		if len(bytes.TrimSpace(b)) == 0 {
			rec.Body = json.RawMessage("null")
		}
		if _, err := s.Response(ctx, rec); err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return resp, nil
	}
}

func keptHeaders(h http.Header, keep []string) map[string]string {
	var m map[string]string
	for _, k := range keep {
		if v := h.Get(k); v != "" {
			if m == nil {
				m = map[string]string{}
			}
			m[k] = v
		}
	}
	return m
}

// streamBody passes a streamed response through and records it when it
// ends (at EOF, before the EOF is returned, so a loop reading to the end
// acts only on a stream the log holds) or when it is closed before.
type streamBody struct {
	s    *Session
	ctx  context.Context
	rc   io.ReadCloser
	rec  Response
	buf  bytes.Buffer
	done bool
	err  error
}

func (b *streamBody) Read(p []byte) (int, error) {
	if b.done {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	b.buf.Write(p[:n])
	if errors.Is(err, io.EOF) {
		if ferr := b.finish(); ferr != nil {
			return n, ferr
		}
	}
	return n, err
}

func (b *streamBody) Close() error {
	ferr := b.finish()
	cerr := b.rc.Close()
	if ferr != nil {
		return ferr
	}
	return cerr
}

func (b *streamBody) finish() error {
	if b.done {
		return b.err
	}
	b.done = true
	events, _ := ParseSSE(b.buf.Bytes())
	b.rec.Stream = events
	if b.rec.Stream == nil {
		b.rec.Stream = []SSEEvent{}
	}
	_, b.err = b.s.Response(b.ctx, b.rec)
	return b.err
}

// The Session's keys and handle satisfy what the package needs of them.
var _ Writer = handle.Handle(nil)
