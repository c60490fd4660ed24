package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	loop "github.com/sessionlog/sessionlog/internal/app/agentloop"
)

func main() {
	dir := flag.String("dir", "sessions", "the session store's folder")
	id := flag.String("session", "", "the session to continue (default: a new one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dir, *id); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, id string) (err error) {
	store := file.New(afero.NewOsFs(), dir)
	var h handle.Handle
	if id == "" {
		h, err = store.Create(ctx, handle.WithLabels(map[string]string{"agent": "agentloop"}))
	} else {
		h, err = store.Open(ctx, id, handle.ReadWrite)
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := h.Close(); err == nil {
			err = cerr
		}
	}()
	fmt.Printf("session %s\n", h.ID())
	work := filepath.Join(dir, "work")
	if err := loop.Prepare(work); err != nil {
		return err
	}
	return loop.Run(ctx, h, loop.DefaultScript(), loop.Options{Workdir: work, Progress: os.Stdout, Cache: store})
}
