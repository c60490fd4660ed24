package jetstream

import (
	"context"
	"errors"
	"io"
	"iter"
	"strconv"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// fetchBatch and fetchBytes bound one batch direct get.
const (
	fetchBatch = 256
	fetchBytes = 8 << 20
)

// errNoMessages: a subject with no message at or after the start.
var errNoMessages = errors.New("jetstream: no messages")

// msgRef locates one message of a session: stream seq, offset of its
// payload in the log, payload length, and the seq of its first row (-1
// when it starts inside a row).
type msgRef struct {
	ss  uint64
	off int64
	seq int64
	n   int
}

// messages yields subj's messages from stream seq from on, in order,
// with batch direct gets, until there are none left.
func (s *Store) messages(ctx context.Context, subj string, from uint64) iter.Seq2[*natsjs.RawStreamMsg, error] {
	return func(yield func(*natsjs.RawStreamMsg, error) bool) {
		next := from
		for {
			msgs, err := jetstreamext.GetBatch(ctx, s.js, s.name, fetchBatch,
				jetstreamext.GetBatchSeq(next), jetstreamext.GetBatchSubject(subj), jetstreamext.GetBatchMaxBytes(fetchBytes))
			if err != nil {
				yield(nil, err)
				return
			}
			n, pending := 0, ""
			for m, err := range msgs {
				if errors.Is(err, jetstreamext.ErrNoMessages) {
					if n == 0 && next == from {
						yield(nil, errNoMessages)
					}
					return
				}
				if err != nil {
					yield(nil, err)
					return
				}
				s.read.Add(int64(len(m.Data)))
				n++
				next, pending = m.Sequence+1, m.Header.Get("Nats-Num-Pending")
				if !yield(m, nil) {
					return
				}
			}
			if n == 0 || pending == "0" {
				return
			}
		}
	}
}

// lastMsgsFor yields subj's last message at or before stream seq upTo.
func (s *Store) lastMsgsFor(ctx context.Context, subj string, upTo uint64) iter.Seq2[*natsjs.RawStreamMsg, error] {
	return func(yield func(*natsjs.RawStreamMsg, error) bool) {
		msgs, err := jetstreamext.GetLastMsgsFor(ctx, s.js, s.name, []string{subj}, jetstreamext.GetLastMsgsUpToSeq(upTo))
		if err != nil {
			yield(nil, err)
			return
		}
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				err = natsjs.ErrMsgNotFound
			}
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}

// msgReader is an io.Reader of a session's log from one of its messages
// on: the payloads in order. It records a msgRef for each message read.
type msgReader struct {
	next func() (*natsjs.RawStreamMsg, error, bool)
	stop func()
	cur  []byte
	off  int64  // offset of the next message's payload
	upto uint64 // stop after this stream seq; 0: read all
	refs []msgRef
	last uint64 // stream seq of the last message read
	err  error  // why fetching failed
}

// newMsgReader reads subj from the message at stream seq ss on, whose
// payload is at offset off.
func (h *jsHandle) newMsgReader(ctx context.Context, ss uint64, off int64) *msgReader {
	next, stop := iter.Pull2(h.s.messages(ctx, h.subj, ss))
	return &msgReader{next: next, stop: stop, off: off}
}

func (r *msgReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		m, err, ok := r.next()
		if !ok || (r.upto > 0 && m != nil && m.Sequence > r.upto) {
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

func (r *msgReader) close() { r.stop() }
