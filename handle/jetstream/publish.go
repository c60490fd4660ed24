package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// Message headers the store writes on data messages.
const (
	hdrOff   = "Sl-Off"   // byte offset of the payload in the session's log
	hdrSeq   = "Sl-Seq"   // seq of the first row, when the payload starts with one
	hdrFlush = "Sl-Flush" // the publish's ID: tells a retried publish that landed from a conflict
)

// errConflict: the subject's last message was not the one expected.
var errConflict = errors.New("jetstream: the session was appended to by another writer")

// isWrongLast reports a failed expected-last-subject-sequence check
// (10071 on one replica, 10164 on replicated streams).
func isWrongLast(err error) bool {
	var ae *natsjs.APIError
	return errors.As(err, &ae) &&
		(ae.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence || ae.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequenceConstant)
}

// msgOffset returns a data message's Sl-Off.
func msgOffset(h nats.Header) (int64, bool) {
	off, err := strconv.ParseInt(h.Get(hdrOff), 10, 64)
	return off, err == nil && off > 0
}

// rowSeq returns the seq of the row rows starts with, if it starts with
// one: rows begin {"seq":N (docs/format.md §3).
func rowSeq(rows []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(rows, []byte(`{"seq":`))
	if !ok {
		return 0, false
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return 0, false
	}
	seq, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return seq, err == nil && seq >= 0
}

// split cuts rows, which start at byte offset off of subj's log, into
// messages of at most maxMsg bytes, at row ends where a row fits.
func (s *Store) split(subj string, rows []byte, off int64) []*nats.Msg {
	var msgs []*nats.Msg
	for len(rows) > 0 {
		n := min(len(rows), s.maxMsg)
		if n < len(rows) {
			if nl := bytes.LastIndexByte(rows[:n], '\n'); nl >= 0 {
				n = nl + 1 // else a row larger than a message: cut inside it
			}
		}
		m := &nats.Msg{Subject: subj, Data: rows[:n], Header: nats.Header{}}
		m.Header.Set(hdrOff, strconv.FormatInt(off, 10))
		if seq, ok := rowSeq(rows[:n]); ok {
			m.Header.Set(hdrSeq, strconv.FormatInt(seq, 10))
		}
		msgs = append(msgs, m)
		rows, off = rows[n:], off+int64(n)
	}
	return msgs
}

// publish stores msgs, all or none, as the messages following stream seq
// last on their subject (the expected-sequence check is on the first), and
// returns the stream seq of the last. More than one message go as one
// atomic batch. A publish whose outcome is unknown (a timeout, a lost
// connection) is retried: if an earlier try landed, the retry's conflict
// is recognised by the publish ID on the subject's last message.
// errConflict means another writer's messages follow last.
func (s *Store) publish(ctx context.Context, msgs []*nats.Msg, last uint64) (uint64, error) {
	id := nuid.Next()
	for _, m := range msgs {
		m.Header.Set(hdrFlush, id)
	}
	msgs[0].Header.Set(natsjs.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
	var err error
	for try := 0; ; try++ {
		var seq uint64
		if seq, err = s.publishOnce(ctx, msgs); err == nil {
			return seq, nil
		}
		if isWrongLast(err) {
			if try > 0 {
				if m, gerr := s.stream.GetLastMsgForSubject(ctx, msgs[0].Subject); gerr == nil && m.Header.Get(hdrFlush) == id {
					return m.Sequence, nil
				}
			}
			return 0, errConflict
		}
		var ae *natsjs.APIError
		if errors.As(err, &ae) || try >= s.cfg.retries || ctx.Err() != nil {
			return 0, err
		}
		s.cfg.log.Warn("publish failed, retrying", "subject", msgs[0].Subject, "try", try+1, "err", err)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Duration(25<<min(try, 5)) * time.Millisecond):
		}
	}
}

func (s *Store) publishOnce(ctx context.Context, msgs []*nats.Msg) (uint64, error) {
	if len(msgs) == 1 {
		ack, err := s.js.PublishMsg(ctx, msgs[0])
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	}
	ack, err := jetstreamext.PublishMsgBatch(ctx, s.js, msgs)
	if err != nil {
		return 0, err
	}
	if ack.BatchSize != uint64(len(msgs)) {
		return 0, fmt.Errorf("jetstream: batch of %d messages acknowledged as %d", len(msgs), ack.BatchSize)
	}
	return ack.Sequence, nil
}
