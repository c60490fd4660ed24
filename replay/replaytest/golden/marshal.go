package golden

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sessionlog/sessionlog/projection"
)

// Suffix ends the name of every golden file.
const Suffix = ".golden.json"

// Marshal returns p's state as a golden file holds it: MarshalState,
// indented with two spaces, with a final newline.
func Marshal(p projection.Projection) ([]byte, error) {
	state, err := p.MarshalState()
	if err != nil {
		return nil, fmt.Errorf("golden: marshal %s state: %w", projection.ID(p), err)
	}
	return Pretty(state)
}

// Pretty indents a JSON state as Marshal does.
func Pretty(state []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, state, "", "  "); err != nil {
		return nil, fmt.Errorf("golden: state is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// FileName is the golden file of p's state beside fixture:
// <fixture>.<name>-v<version>.golden.json.
func FileName(fixture string, p projection.Projection) string {
	return fmt.Sprintf("%s.%s-v%d%s", fixture, p.Name(), p.Version(), Suffix)
}
