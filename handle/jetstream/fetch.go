package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Reads and where they are served (docs/distributed.md §Reading):
//
//   - Bulk reads (a log's messages) are batch direct gets, which any
//     replica answers — usually the one on the server the client is
//     connected to, which may lag behind the stream's leader.
//   - What decides how far a read must go is asked of the stream's leader
//     (the JetStream API's message get, which only the leader answers):
//     the subject's last message when a read, Open or Stat starts. A bulk
//     read is complete only once it has reached that message; a replica
//     that answers short is asked again, and then the leader message by
//     message. So no read misses a flush acknowledged before it started.
//   - A write handle's own reads go as far as its own last publish, which
//     it knows without asking.

// fetchBatch and fetchBytes bound one batch direct get.
const (
	fetchBatch = 256
	fetchBytes = 8 << 20
)

// lagTries is how many times an empty direct get is retried, with a short
// wait, before the message is asked of the leader.
const lagTries = 6

// msgRef locates one message of a session: stream seq, offset of its
// payload in the log, payload length, and the seq of its first row (-1
// when it starts inside a row).
type msgRef struct {
	ss  uint64
	off int64
	seq int64
	n   int
}

// msgGetReq is the JetStream API's message get request (direct or not).
type msgGetReq struct {
	Seq          uint64   `json:"seq,omitempty"`
	LastFor      string   `json:"last_by_subj,omitempty"`
	NextFor      string   `json:"next_by_subj,omitempty"`
	Batch        int      `json:"batch,omitempty"`
	MaxBytes     int      `json:"max_bytes,omitempty"`
	MultiLastFor []string `json:"multi_last,omitempty"`
	UpToSeq      uint64   `json:"up_to_seq,omitempty"`
}

// leaderGet asks the leader of stream for one message (one try).
// natsjs.ErrMsgNotFound when there is none.
func (s *Store) leaderGet(ctx context.Context, stream string, req msgGetReq) (*natsjs.RawStreamMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := s.js.Conn().RequestWithContext(ctx, s.api+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Error   *natsjs.APIError `json:"error"`
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, fmt.Errorf("jetstream: message get on %s: %w", stream, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrorCode == natsjs.JSErrCodeMessageNotFound:
		return nil, natsjs.ErrMsgNotFound
	case r.Error != nil:
		return nil, r.Error
	case r.Message == nil:
		return nil, fmt.Errorf("jetstream: message get on %s: empty answer", stream)
	}
	m := &natsjs.RawStreamMsg{Subject: r.Message.Subject, Sequence: r.Message.Seq, Data: r.Message.Data, Time: r.Message.Time, Header: nats.Header{}}
	if len(r.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(r.Message.Header); err != nil {
			return nil, fmt.Errorf("jetstream: message get on %s: %w", stream, err)
		}
	}
	return m, nil
}

// leaderMsg is leaderGet on the store's stream, retried through
// transient failures.
func (s *Store) leaderMsg(ctx context.Context, req msgGetReq) (*natsjs.RawStreamMsg, error) {
	var m *natsjs.RawStreamMsg
	err := s.do(ctx, "read "+s.name, func(ctx context.Context) error {
		var err error
		m, err = s.leaderGet(ctx, s.name, req)
		return err
	})
	if err == nil {
		s.read.Add(int64(len(m.Data)))
	}
	return m, err
}

// lastMsg is subj's last message, as the stream's leader holds it — or
// as a replica does, when that is newer: a leader frozen and resumed
// answers from its older state until it learns it was replaced, while
// what any replica holds was committed. The replica (usually the one on
// the server the connection is on) is asked at the same time, and given
// only a quarter of the request timeout. That the subject has no message
// is only taken from the leader.
func (s *Store) lastMsg(ctx context.Context, subj string) (*natsjs.RawStreamMsg, error) {
	replica := make(chan *natsjs.RawStreamMsg, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.reqTimeout/4)
		defer cancel()
		rctx, done := s.watch.track(rctx)
		defer done()
		got, err := s.direct(rctx, msgGetReq{MultiLastFor: []string{subj}, Batch: 1})
		if err != nil || len(got) == 0 || got[0].Subject != subj {
			replica <- nil
			return
		}
		replica <- got[0]
	}()
	m, err := s.leaderMsg(ctx, msgGetReq{LastFor: subj})
	r := <-replica
	switch {
	case err != nil:
		// "None" is the leader's to say: a replica lagging behind a
		// purge still holds the deleted session.
		return nil, err
	case r != nil && r.Sequence > m.Sequence:
		s.cfg.hc.Logger.Debug("a replica is ahead of the leader's answer", "subject", subj, "replica", r.Sequence)
		s.read.Add(int64(len(r.Data)))
		return r, nil
	}
	return m, err
}

// firstMsg is subj's first message (its header), as the leader holds it.
func (s *Store) firstMsg(ctx context.Context, subj string) (*natsjs.RawStreamMsg, error) {
	return s.leaderMsg(ctx, msgGetReq{Seq: 1, NextFor: subj})
}

// tailRef describes subj's last message, as the leader holds it.
func (s *Store) tailRef(ctx context.Context, subj string) (msgRef, error) {
	m, err := s.lastMsg(ctx, subj)
	if err != nil {
		return msgRef{}, err
	}
	off, _ := msgOffset(m.Header)
	seq := int64(-1)
	if v, ok := msgSeq(m.Header); ok {
		seq = v
	}
	return msgRef{ss: m.Sequence, off: off, seq: seq, n: len(m.Data)}, nil
}

// direct sends one direct get request (any replica answers) and collects
// the messages of its answer until its end-of-batch marker. A request
// answered "no messages" returns none and no error. What came before a
// failure is returned with it.
func (s *Store) direct(ctx context.Context, req msgGetReq) ([]*natsjs.RawStreamMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	nc := s.js.Conn()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(s.api+"DIRECT.GET."+s.name, inbox, body); err != nil {
		return nil, err
	}
	var out []*natsjs.RawStreamMsg
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return out, err
		}
		if status := m.Header.Get("Status"); status != "" && len(m.Data) == 0 {
			switch status {
			case "204", "404": // end of batch; nothing at or after the seq asked
				return out, nil
			case "503":
				return out, nats.ErrNoResponders
			}
			return out, fmt.Errorf("jetstream: direct get on %s: %s %s", s.name, status, m.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(m.Header.Get(natsjs.SequenceHeader), 10, 64)
		if err != nil {
			return out, fmt.Errorf("jetstream: direct get on %s: a message without its sequence", s.name)
		}
		out = append(out, &natsjs.RawStreamMsg{Subject: m.Header.Get(natsjs.SubjectHeader), Sequence: seq, Header: m.Header, Data: m.Data})
	}
}

// messages yields subj's messages from stream seq from through upto (the
// subject's last message as the leader answered it, or a writer's own last
// publish), in order. Batches of direct gets do the bulk; a replica that has not yet
// caught up with tail is asked again a few times, then the leader is
// asked message by message (see the top of this file). The subject ending
// before tail (it was purged or cut meanwhile) ends the sequence.
func (s *Store) messages(ctx context.Context, subj string, from, upto uint64) iter.Seq2[*natsjs.RawStreamMsg, error] {
	return func(yield func(*natsjs.RawStreamMsg, error) bool) {
		next, lag := from, 0
		for next <= upto {
			var batch []*natsjs.RawStreamMsg
			err := s.do(ctx, "read "+subj, func(ctx context.Context) error {
				var err error
				batch, err = s.direct(ctx, msgGetReq{Seq: next, NextFor: subj, Batch: fetchBatch, MaxBytes: fetchBytes})
				if len(batch) > 0 {
					return nil // go on from what came
				}
				return err
			})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, m := range batch {
				if m.Sequence < next || m.Subject != subj {
					continue
				}
				if m.Sequence > upto {
					return
				}
				s.read.Add(int64(len(m.Data)))
				next, lag = m.Sequence+1, 0
				if !yield(m, nil) {
					return
				}
			}
			if len(batch) > 0 || next > upto {
				continue
			}
			// The replica that answered has nothing at next yet.
			if lag++; lag <= lagTries {
				if err := sleep(ctx, time.Duration(1<<lag)*time.Millisecond); err != nil {
					yield(nil, err)
					return
				}
				continue
			}
			m, err := s.leaderMsg(ctx, msgGetReq{Seq: next, NextFor: subj})
			if errors.Is(err, natsjs.ErrMsgNotFound) || (err == nil && m.Sequence > upto) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			next = m.Sequence + 1
			if !yield(m, nil) {
				return
			}
		}
	}
}

// before returns subj's message just before stream seq ss, whose payload
// must end where at begins (a replica that has not caught up answers with
// an older one: it is asked again).
func (s *Store) before(ctx context.Context, subj string, ss uint64, at int64) (*natsjs.RawStreamMsg, error) {
	for lag := 0; ; lag++ {
		var got []*natsjs.RawStreamMsg
		err := s.do(ctx, "read "+subj, func(ctx context.Context) error {
			var err error
			got, err = s.direct(ctx, msgGetReq{MultiLastFor: []string{subj}, UpToSeq: ss - 1, Batch: 1})
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			return nil, natsjs.ErrMsgNotFound
		}
		m := got[0]
		if off, _ := msgOffset(m.Header); off+int64(len(m.Data)) == at {
			s.read.Add(int64(len(m.Data)))
			return m, nil
		}
		if lag == lagTries {
			return nil, unavailable("read "+subj, 0, fmt.Errorf("no replica holds the message before stream seq %d", ss))
		}
		if err := sleep(ctx, time.Duration(1<<lag)*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// msgReader is an io.Reader of a session's log from one of its messages
// on: the payloads in order, through the subject's last message as the
// leader knows it when the first byte is read (or through stream seq upto,
// a writer's own last publish). It records a msgRef for each message read.
type msgReader struct {
	s    *Store
	ctx  context.Context
	subj string
	from uint64
	tail *natsjs.RawStreamMsg // the last message to read (only its Sequence, for a writer)
	next func() (*natsjs.RawStreamMsg, error, bool)
	stop func()
	cur  []byte
	off  int64  // offset of the next message's payload
	upto uint64 // stop after this stream seq; 0: at the leader's last message
	refs []msgRef
	last uint64 // stream seq of the last message read
	err  error  // why fetching failed
	done bool
}

// newMsgReader reads subj from the message at stream seq ss on, whose
// payload is at offset off.
func (s *Store) newMsgReader(ctx context.Context, subj string, ss uint64, off int64) *msgReader {
	return &msgReader{s: s, ctx: ctx, subj: subj, from: ss, off: off}
}

// fetch returns the next message to read; false at the end.
func (r *msgReader) fetch() (*natsjs.RawStreamMsg, error, bool) {
	if r.tail == nil {
		r.tail = &natsjs.RawStreamMsg{Sequence: r.upto}
		if r.upto == 0 {
			m, err := r.s.lastMsg(r.ctx, r.subj)
			if errors.Is(err, natsjs.ErrMsgNotFound) {
				return nil, nil, false
			}
			if err != nil {
				return nil, err, true
			}
			r.tail = m
		}
	}
	// The leader's answer is the next message when its payload starts
	// where the last one read ends: no need to fetch it again.
	if t := r.tail; t.Data != nil && t.Sequence >= r.from && t.Sequence > r.last {
		if off, _ := msgOffset(t.Header); off == r.off {
			r.close()
			r.done = true
			return t, nil, true
		}
	}
	if r.next == nil {
		r.next, r.stop = iter.Pull2(r.s.messages(r.ctx, r.subj, r.from, r.tail.Sequence))
	}
	return r.next()
}

func (r *msgReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			return 0, io.EOF
		}
		m, err, ok := r.fetch()
		if !ok {
			r.done = true
			return 0, io.EOF
		}
		if err == nil && incomplete(m) {
			err = errIncomplete
		}
		if err != nil {
			r.err = err
			return 0, err
		}
		seq := int64(-1)
		if v, err := strconv.ParseInt(m.Header.Get(hdrSeq), 10, 64); err == nil {
			seq = v
		}
		r.refs = append(r.refs, msgRef{ss: m.Sequence, off: r.off, seq: seq, n: len(m.Data)})
		r.off += int64(len(m.Data))
		r.last = m.Sequence
		r.cur = m.Data
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

func (r *msgReader) close() {
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
}
