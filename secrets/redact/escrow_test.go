package redact_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/secrets/redact"
)

// toySeal "seals" by hex-free reversal into SealedText: enough to check
// that Restore puts back exactly what Escrow kept.
func toySeal(orig []byte) (string, error) { return redact.SealedText(orig), nil }

func toyOpen(s string) ([]byte, error) { return redact.SealedBytes(s) }

const akia = "AKIAIOSFODNN7EXAMPLE"

func TestEscrowRestoresExactBytes(t *testing.T) {
	r := redact.New()
	gh := "ghp_" + strings.Repeat("a1B2", 9)
	tests := []struct {
		name, data string
		changed    bool
	}{
		{"no secret", `{"a":"hello"}`, false},
		{"value", `{"a":"key ` + akia + ` here","b":1}`, true},
		{"escapes kept as written", `{"a":"line\n\u0041KIAIOSFODNN7EXAMPLE\t","b":[1,2]}`, true},
		{"nested arrays", `{"m":[{"c":[{"t":"x"},{"t":"` + gh + `"}]}]}`, true},
		{"key and its value", `{"` + akia + `":{"v":"` + gh + `"},"z":null}`, true},
		{"several in one string", `{"s":"` + akia + ` and ` + gh + `"}`, true},
		{"whitespace around", "{ \"a\" : \"" + akia + "\" , \"b\" : 2 }", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := r.Escrow([]byte(tt.data), toySeal)
			require.NoError(t, err)
			require.Equal(t, tt.changed, changed)
			require.NotContains(t, string(out), akia)
			require.NotContains(t, string(out), gh)
			again, kinds, _ := r.Redact(out)
			require.Nil(t, kinds, "the escrowed form holds nothing a detector finds")
			require.Equal(t, out, again)
			back, err := redact.Restore(out, toyOpen)
			require.NoError(t, err)
			require.Equal(t, tt.data, string(back))
		})
	}
}

func TestEscrowRefusesAnExistingRecord(t *testing.T) {
	_, _, err := redact.New().Escrow([]byte(`{"a":"`+akia+`","$redacted":[]}`), toySeal)
	require.ErrorIs(t, err, redact.ErrEscrow)
}

func TestEscrowRefusesNonObjectWithSecret(t *testing.T) {
	_, _, err := redact.New().Escrow([]byte(`["`+akia+`"]`), toySeal)
	require.ErrorIs(t, err, redact.ErrEscrow)
	out, changed, err := redact.New().Escrow([]byte(`["clean"]`), toySeal)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, `["clean"]`, string(out))
}

func TestEscrowSealError(t *testing.T) {
	boom := errors.New("no key")
	_, _, err := redact.New().Escrow([]byte(`{"a":"`+akia+`"}`), func([]byte) (string, error) { return "", boom })
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, redact.ErrEscrow)
}

func TestRestoreRefusesPlainRedaction(t *testing.T) {
	plain, ok := redact.New().Data([]byte(`{"a":"` + akia + `"}`))
	require.True(t, ok)
	_, err := redact.Restore(plain, toyOpen)
	require.ErrorIs(t, err, redact.ErrEscrow)
}

// No detector matches sealed text, whatever the ciphertext: a sealed
// original is never redacted again by a later write.
func TestSealedTextMatchesNoDetector(t *testing.T) {
	r := redact.New()
	for n := 0; n < 2000; n++ {
		b := make([]byte, 1+n%300)
		_, _ = rand.Read(b)
		s := redact.SealedText(b)
		data := []byte(fmt.Sprintf(`{"s":%q}`, s))
		_, kinds, changed := r.Redact(data)
		require.False(t, changed, "%s matched %v", s, kinds)
		back, err := redact.SealedBytes(s)
		require.NoError(t, err)
		require.True(t, bytes.Equal(b, back))
	}
}

func FuzzEscrowRestore(f *testing.F) {
	f.Add(`{"a":"` + akia + `"}`)
	f.Add(`{"` + akia + `":{"` + akia + `":"` + akia + `"}}`)
	f.Add(`{"a":["x","\u0041KIAIOSFODNN7EXAMPLE"]}`)
	r := redact.New()
	f.Fuzz(func(t *testing.T, data string) {
		out, changed, err := r.Escrow([]byte(data), toySeal)
		if err != nil || !changed || !bytes.HasPrefix(bytes.TrimSpace([]byte(data)), []byte("{")) {
			return
		}
		back, err := redact.Restore(out, toyOpen)
		require.NoError(t, err)
		require.Equal(t, data, string(back))
	})
}

// A secret sent in two pieces is found in the pieces joined, and both
// pieces are escrowed whole; Restore gives back every byte.
func TestEscrowAtSplitSecret(t *testing.T) {
	r := redact.New()
	data := `{"s":[{"d":"key AKIAIOSF"},{"d":"ODNN7EXAMPLE ok"},{"d":"` + akia + `"}]}`
	pieces := []string{`key AKIAIOSF`, `ODNN7EXAMPLE ok`}
	spans := r.Find([]byte(strings.Join(pieces, "")))
	require.Len(t, spans, 1)
	require.Equal(t, "aws-access-key-id", spans[0].Kind)
	require.Equal(t, 4, spans[0].Start)
	// The whole strings first, then the pieces.
	out, changed, err := r.Escrow([]byte(data), toySeal)
	require.NoError(t, err)
	require.True(t, changed)
	out, err = redact.EscrowAt(out, []redact.At{
		{Path: []string{"s", "0", "d"}, Kinds: []string{spans[0].Kind}},
		{Path: []string{"s", "1", "d"}, Kinds: []string{spans[0].Kind}},
	}, toySeal)
	require.NoError(t, err)
	require.NotContains(t, string(out), "AKIAIOSF")
	require.NotContains(t, string(out), "ODNN7EXAMPLE")
	back, err := redact.Restore(out, toyOpen)
	require.NoError(t, err)
	require.Equal(t, data, string(back))
	// Without an existing record, EscrowAt makes one.
	out, err = redact.EscrowAt([]byte(`{"a":"x"}`), []redact.At{{Path: []string{"a"}, Kinds: []string{"k"}}}, toySeal)
	require.NoError(t, err)
	back, err = redact.Restore(out, toyOpen)
	require.NoError(t, err)
	require.Equal(t, `{"a":"x"}`, string(back))
}
