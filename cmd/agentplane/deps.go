package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/agentplane/agentplane/shared/kit/config"
)

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})).With("role", cfg.Role)
}

// redisLogger sends go-redis's internal messages (reconnects, pool trouble) to the JSON log.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, fmt.Sprintf(format, v...))
}
