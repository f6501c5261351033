// Package devstack runs the dependencies of `agentplane dev` and of the tests inside this
// process: FerretDB on SQLite for MongoDB, a NATS server with JetStream, and Redis.
package devstack

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentplane/agentplane/shared/kit/config"
)

// Stack is the embedded servers dev started; it fills in the URLs configuration left unset.
type Stack struct {
	mongo *Mongo
	nats  *NATS
	redis *Redis
}

// Start starts an embedded server for every dependency whose URL cfg leaves empty and writes
// the server's URL into cfg. Data is kept under cfg.DataDir.
func Start(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*Stack, error) {
	s := &Stack{}
	fail := func(err error) (*Stack, error) {
		s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	var err error
	if cfg.MongoURI == "" {
		quiet := slog.New(logger.Handler()).With("component", "ferretdb")
		dir := filepath.Join(cfg.DataDir, "mongo")
		s.mongo, err = StartMongo(ctx, dir, cfg.DevMongoAddr, quietLogger(quiet))
		if errors.Is(err, syscall.EADDRINUSE) && !cfg.DevMongoAddrGiven {
			logger.Warn("the embedded store's default address is taken (another dev?): it listens on a free port instead", "taken", cfg.DevMongoAddr)
			s.mongo, err = StartMongo(ctx, dir, "127.0.0.1:0", quietLogger(quiet))
		}
		if err != nil {
			return fail(err)
		}
		cfg.MongoURI = s.mongo.URI
		logger.Info("embedded MongoDB-compatible store (FerretDB/SQLite)", "uri", s.mongo.URI)
	}
	if cfg.NATSURL == "" {
		if s.nats, err = StartNATS(filepath.Join(cfg.DataDir, "nats"), 0); err != nil {
			return fail(err)
		}
		cfg.NATSURL = s.nats.URL
		logger.Info("embedded NATS server with JetStream", "url", s.nats.URL)
	}
	if cfg.RedisURL == "" {
		s.redis, err = StartRedisServer(ctx, filepath.Join(cfg.DataDir, "redis"), 0, true)
		if errors.Is(err, ErrNoRedisServer) {
			logger.Warn("redis-server is not installed: using an in-memory embedded Redis; queued tasks are lost when dev stops. Install redis-server to keep them.")
			s.redis, err = StartMiniRedis()
		}
		if err != nil {
			return fail(err)
		}
		cfg.RedisURL = s.redis.URL
		logger.Info("embedded Redis", "url", s.redis.URL, "persistent", s.redis.Persistent)
	}
	return s, nil
}

// Close stops the servers in the reverse order of their start.
func (s *Stack) Close(ctx context.Context) {
	if s.redis != nil {
		s.redis.Close()
	}
	if s.nats != nil {
		s.nats.Close()
	}
	if s.mongo != nil {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = s.mongo.Close(ctx)
	}
}

// quietLogger keeps FerretDB's errors and drops its connection chatter.
func quietLogger(l *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{Handler: l.Handler(), min: slog.LevelError})
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

func (f levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{Handler: f.Handler.WithAttrs(a), min: f.min}
}

func (f levelFilter) WithGroup(name string) slog.Handler {
	return levelFilter{Handler: f.Handler.WithGroup(name), min: f.min}
}

// Reindex gives the embedded store's collections of database the SQLite indexes FerretDB reads
// and only those (see Mongo.Reindex); with a configured MongoDB it does nothing.
func (s *Stack) Reindex(ctx context.Context, database string) error {
	if s.mongo == nil {
		return nil
	}
	return s.mongo.Reindex(ctx, database)
}
