package jetstream

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/sessionlog/sessionlog/handle/internal/sealing"
)

// Message headers the store writes on data messages.
const (
	hdrOff   = "Sl-Off"   // byte offset of the payload in the session's log
	hdrSeq   = "Sl-Seq"   // seq of the first row, when the payload starts with one
	hdrFlush = "Sl-Flush" // the publish's ID: tells a retried publish that landed from a conflict
)

// errConflict: the subject's last message was not the one expected.
var errConflict = errors.New("jetstream: the session was appended to by another writer")

// isWrongLast reports a failed expected-last-subject-sequence check: the
// subject's last message is another (10071).
func isWrongLast(err error) bool {
	var ae *natsjs.APIError
	return errors.As(err, &ae) && ae.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence
}

// inFlight reports the check not made because a message of the subject is
// still being committed (10164, replicated streams only). It is no
// conflict: the server acknowledges a publish before it forgets it was in
// flight, so the next publish of one writer can meet its own previous one.
func inFlight(err error) bool {
	var ae *natsjs.APIError
	return errors.As(err, &ae) && ae.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequenceConstant
}

// msgOffset returns a data message's Sl-Off.
func msgOffset(h nats.Header) (int64, bool) {
	off, err := strconv.ParseInt(h.Get(hdrOff), 10, 64)
	return off, err == nil && off > 0
}

// split cuts rows, which start at byte offset off of subj's log, into
// messages of at most maxMsg bytes, at row ends where a row fits. recs,
// for a sealed log's records, says which start a row and its seq (nil: a
// clear log's rows, which say it themselves).
func (s *Store) split(subj string, rows []byte, off int64, recs []sealing.Record) []*nats.Msg {
	var msgs []*nats.Msg
	for at := 0; at < len(rows); {
		n := min(len(rows)-at, s.maxMsg)
		if at+n < len(rows) {
			if nl := bytes.LastIndexByte(rows[at:at+n], '\n'); nl >= 0 {
				n = nl + 1 // else a row larger than a message: cut inside it
			}
		}
		m := &nats.Msg{Subject: subj, Data: rows[at : at+n], Header: nats.Header{}}
		m.Header.Set(hdrOff, strconv.FormatInt(off+int64(at), 10))
		seq, ok := int64(0), false
		if recs == nil {
			seq, ok = sealing.RowSeq(rows[at : at+n])
		} else if i, found := slices.BinarySearchFunc(recs, at, func(r sealing.Record, at int) int { return cmp.Compare(r.Off, at) }); found {
			seq, ok = recs[i].Seq, recs[i].Seq >= 0
		}
		if ok {
			m.Header.Set(hdrSeq, strconv.FormatInt(seq, 10))
		}
		msgs = append(msgs, m)
		at += n
	}
	return msgs
}

// publish stores msgs, all or none, as the messages following stream seq
// last on their subject (the expected-sequence check is on the first), and
// returns the stream seq of the last. More than one message go as one
// atomic batch. errConflict means another writer's messages follow last.
//
// A try whose outcome is unknown (a timeout, a connection lost, no leader)
// is retried with the same expected seq until the store's retry window has
// passed. A failed expected-seq check is never taken at its word: an
// earlier try may have landed, and a leader frozen and resumed answers
// from its older state until it learns it was replaced. So the stream's
// leader is asked which message follows last (see landed): the publish's
// own (its Sl-Flush ID) means it was stored, once; another writer's means a
// conflict; none yet means a try is still being committed or the answer
// was stale, and the publish is tried again. So a stored batch is never
// reported as lost, nor stored twice.
func (s *Store) publish(ctx context.Context, msgs []*nats.Msg, last uint64) (uint64, error) {
	id := nuid.Next()
	for _, m := range msgs {
		m.Header.Set(hdrFlush, id)
	}
	msgs[0].Header.Set(natsjs.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
	subj := msgs[0].Subject
	start, waits, shrunk := time.Now(), 0, 0
	for try := 0; ; try++ {
		var seq uint64
		err := s.attempt(ctx, func(tctx context.Context) (err error) {
			seq, err = s.pubOnce(tctx, msgs)
			return err
		})
		wait := backoff(try)
		switch {
		case err == nil:
			return seq, nil
		case isWrongLast(err):
			seq, state, lerr := s.landed(ctx, subj, last, id, len(msgs))
			switch {
			case lerr != nil:
				return 0, lerr
			case state == landedOurs:
				return seq, nil
			case state == landedShrunk:
				// The subject ends before last. Persistently so is
				// no stale answer: the session was cut or purged.
				if shrunk++; shrunk > lagTries {
					return 0, errConflict
				}
			}
		case ctx.Err() != nil:
			return 0, fmt.Errorf("jetstream: publish to %s, outcome unknown: %w", subj, ctx.Err())
		case inFlight(err):
			// A message is being committed: ours from the last flush,
			// typically, for a millisecond or two.
			wait = time.Duration(1<<min(waits, 7)) * time.Millisecond
			waits++
		case !s.transient(err):
			return 0, err
		default:
			if timedOut(err) {
				s.heal()
			}
			s.cfg.hc.Logger.Warn("publish failed, retrying", "subject", subj, "try", try+1, "err", err)
		}
		if time.Since(start) >= s.cfg.retryWindow {
			return 0, unavailable("publish to "+subj+", outcome unknown", time.Since(start), err)
		}
		if err := sleep(ctx, wait); err != nil {
			return 0, fmt.Errorf("jetstream: publish to %s, outcome unknown: %w", subj, err)
		}
	}
}

// What landed found after stream seq last.
const (
	landedNone   = iota // nothing yet: a try in flight, or a stale answer
	landedOurs          // the publish's own messages
	landedShrunk        // the subject ends before last
)

// landed asks the stream's leader, after a publish failed its expected-seq
// check, whether a try of publish id (n messages following stream seq last
// on subj) was stored: landedOurs and the stream seq of its last message
// if so, errConflict if another writer's message follows last. Only a
// message seen decides: what a stale leader holds is a prefix of the
// stream, so a message it shows is there, while its "nothing" may not be
// true.
func (s *Store) landed(ctx context.Context, subj string, last uint64, id string, n int) (uint64, int, error) {
	m, err := s.leaderMsg(ctx, msgGetReq{Seq: last + 1, NextFor: subj})
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		t, err := s.lastMsg(ctx, subj)
		switch {
		case errors.Is(err, natsjs.ErrMsgNotFound) || (err == nil && t.Sequence < last):
			return 0, landedShrunk, nil
		case err != nil:
			return 0, 0, err
		}
		return 0, landedNone, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if m.Header.Get(hdrFlush) != id {
		return 0, 0, errConflict
	}
	// An atomic batch is stored as consecutive stream seqs; walk them
	// should another subject's message stand between.
	for i := 1; i < n; i++ {
		next, err := s.leaderMsg(ctx, msgGetReq{Seq: m.Sequence + 1, NextFor: subj})
		if err != nil {
			return 0, 0, fmt.Errorf("jetstream: publish to %s: message %d of a stored batch: %w", subj, i+1, err)
		}
		if next.Header.Get(hdrFlush) != id {
			return 0, 0, fmt.Errorf("jetstream: publish to %s: a stored batch of %d messages holds %d", subj, n, i)
		}
		m = next
	}
	s.cfg.hc.Logger.Info("a retried publish had landed", "subject", subj, "seq", m.Sequence)
	return m.Sequence, landedOurs, nil
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
