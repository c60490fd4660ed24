package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// params returns the first request's parameters, before its messages.
func (cfg config) params() sdk.MessageNewParams {
	return sdk.MessageNewParams{
		Model:     sdk.Model(cfg.model),
		MaxTokens: cfg.maxTokens,
		System:    []sdk.TextBlockParam{{Text: cfg.system}},
		Thinking:  sdk.ThinkingConfigParamOfEnabled(cfg.budget),
		Tools: []sdk.ToolUnionParam{
			{OfTool: &sdk.ToolParam{Name: "read_file", Description: sdk.String("Read a file of the work folder."),
				InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}, Required: []string{"path"}}}},
			{OfTool: &sdk.ToolParam{Name: "run_command", Description: sdk.String("Run a shell command (sh -c) in the work folder."),
				InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"command": map[string]any{"type": "string"}}, Required: []string{"command"}}}},
		},
	}
}

// send makes one call (streamed with --stream) and prints the text the
// model wrote. The response is recorded by the client's middleware.
func send(ctx context.Context, client sdk.Client, cfg config, p sdk.MessageNewParams) error {
	var msg sdk.Message
	if cfg.stream {
		s := client.Messages.NewStreaming(ctx, p)
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				return err
			}
		}
		if err := s.Err(); err != nil {
			return err
		}
		if err := s.Close(); err != nil {
			return err
		}
	} else {
		m, err := client.Messages.New(ctx, p)
		if err != nil {
			return err
		}
		msg = *m
	}
	for _, b := range msg.Content {
		if b.Type == "text" {
			fmt.Fprintf(cfg.out, "assistant: %s\n", b.Text)
		}
	}
	return nil
}

// tool runs a tool call in the folder work and returns its output, and
// whether it failed.
func tool(ctx context.Context, work string, use sdk.ToolUseBlock) (string, bool) {
	var in struct {
		Path    string `json:"path"`
		Command string `json:"command"`
	}
	if err := json.Unmarshal(use.Input, &in); err != nil {
		return "bad input: " + err.Error(), true
	}
	switch use.Name {
	case "read_file":
		p := filepath.Clean(in.Path)
		if filepath.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return "read_file reads inside the work folder only", true
		}
		b, err := os.ReadFile(filepath.Join(work, p))
		if err != nil {
			return err.Error(), true
		}
		return string(b), false
	case "run_command":
		cmd := exec.CommandContext(ctx, "sh", "-c", in.Command)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s\n%v", out, err), true
		}
		return string(out), false
	}
	return "no tool " + use.Name, true
}
