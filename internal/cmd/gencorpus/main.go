package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
)

// defaultDir is the corpus folder, relative to the repository root.
const defaultDir = "testdata/sessions"

func main() {
	dir := flag.String("dir", "", "the folder to write (default: "+defaultDir+", from the repository root)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	if dir == "" {
		// A relative default written from the wrong folder would scatter
		// files; insist on the repository root.
		if _, err := os.Stat("go.mod"); err != nil {
			return fmt.Errorf("run from the repository root, or pass -dir: %w", err)
		}
		dir = defaultDir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	written, err := generate(ctx, dir)
	if err != nil {
		return err
	}
	var size int64
	for _, w := range written {
		size += w.size
	}
	fmt.Printf("wrote %d fixtures (%d bytes) and README.md to %s\n", len(written), size, filepath.Clean(dir))
	fmt.Println("now regenerate their goldens: go test ./replay/replaytest -run Corpus -update")
	return nil
}
