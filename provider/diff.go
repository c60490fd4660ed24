package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"filippo.io/age"

	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/replay/replaytest/golden"
)

// RequestDiff is where two sessions' model calls first differ (Differs):
// the call (from 0), each side's request seq (-1 when that side made
// fewer calls), the first differing JSON path and both values, cut to a
// readable length; and how many calls each side made.
type RequestDiff struct {
	Differs bool   `json:"-"`
	Call    int    `json:"call"`
	SeqA    int64  `json:"seqA"`
	SeqB    int64  `json:"seqB"`
	Path    string `json:"path"`
	A       string `json:"a"`
	B       string `json:"b"`
	Note    string `json:"note,omitempty"`
	CallsA  int    `json:"callsA"`
	CallsB  int    `json:"callsB"`
}

// DiffRequests compares the model requests of a's and b's live branches
// in order, as canonical JSON with the volatile fields ignored (those of
// DefaultVolatile plus volatile), and returns the first that differs
// (Differs false when every request is the same). With keys it compares
// them in clear; without, in their redacted form.
func DiffRequests(ctx context.Context, a, b replay.Source, keys *Keys, volatile ...string) (RequestDiff, error) {
	xa, err := Exchanges(ctx, a, -1, keys)
	if err != nil {
		return RequestDiff{}, fmt.Errorf("provider: %s: %w", a.ID(), err)
	}
	xb, err := Exchanges(ctx, b, -1, keys)
	if err != nil {
		return RequestDiff{}, fmt.Errorf("provider: %s: %w", b.ID(), err)
	}
	vol := append(DefaultVolatile(), volatile...)
	for i := 0; i < max(len(xa), len(xb)); i++ {
		d := RequestDiff{Differs: true, Call: i, SeqA: -1, SeqB: -1, CallsA: len(xa), CallsB: len(xb)}
		if i >= len(xa) || i >= len(xb) {
			if i < len(xa) {
				d.SeqA, d.A, d.B, d.Path = xa[i].Request.Seq, "(a request)", "(none)", "(root)"
			} else {
				d.SeqB, d.A, d.B, d.Path = xb[i].Request.Seq, "(none)", "(a request)", "(root)"
			}
			return d, nil
		}
		d.SeqA, d.SeqB = xa[i].Request.Seq, xb[i].Request.Seq
		ca, err := canonicalBody(xa[i].Request.Body, vol)
		if err != nil {
			return RequestDiff{}, err
		}
		cb, err := canonicalBody(xb[i].Request.Body, vol)
		if err != nil {
			return RequestDiff{}, err
		}
		if m := golden.Compare(ca, cb); m != nil {
			d.Path, d.A, d.B, d.Note = m.Path, m.Want, m.Got, m.Note
			return d, nil
		}
	}
	return RequestDiff{SeqA: -1, SeqB: -1, CallsA: len(xa), CallsB: len(xb)}, nil
}

// canonicalBody is a request body as canonical JSON (object keys sorted),
// the volatile fields left out.
func canonicalBody(body []byte, volatile []string) ([]byte, error) {
	v, err := canonicalTree(body)
	if err != nil {
		return nil, fmt.Errorf("%w: a request body is not JSON: %w", ErrRecord, err)
	}
	for _, p := range volatile {
		deletePath(v, p)
	}
	return json.Marshal(v)
}

// KeysFrom returns Keys that open with the given age identities (none:
// nil), for readers that hold the agent's identity file.
func KeysFrom(ids ...age.Identity) *Keys {
	if len(ids) == 0 {
		return nil
	}
	k := &Keys{identities: ids}
	for _, id := range ids {
		if x, ok := id.(*age.X25519Identity); ok {
			k.recipients = append(k.recipients, x.Recipient())
			break
		}
	}
	return k
}
