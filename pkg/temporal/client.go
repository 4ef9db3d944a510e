package temporal

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
)

// Dial connects to the Temporal frontend named in cfg and checks that it
// answers, so an unreachable address fails at start naming the key.
func Dial(ctx context.Context, cfg config.Temporal, logger *zap.Logger) (client.Client, error) {
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  cfg.HostPort,
		Namespace: cfg.Namespace,
		Logger:    NewLogger(logger),
	})
	if err != nil {
		return nil, fmt.Errorf("temporal.host_port %s: %w", cfg.HostPort, err)
	}
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		c.Close()
		return nil, fmt.Errorf("temporal.host_port %s: health check: %w", cfg.HostPort, err)
	}
	return c, nil
}

// zapLogger adapts zap to the SDK's key-value logger.
type zapLogger struct{ s *zap.SugaredLogger }

// NewLogger returns an SDK logger writing through zap.
func NewLogger(l *zap.Logger) *zapLogger {
	return &zapLogger{s: l.WithOptions(zap.AddCallerSkip(1)).Sugar()}
}

func (l *zapLogger) Debug(msg string, kv ...any) { l.s.Debugw(msg, kv...) }
func (l *zapLogger) Info(msg string, kv ...any)  { l.s.Infow(msg, kv...) }
func (l *zapLogger) Warn(msg string, kv ...any)  { l.s.Warnw(msg, kv...) }
func (l *zapLogger) Error(msg string, kv ...any) { l.s.Errorw(msg, kv...) }

// DialLazy returns a client that connects on its first call, for a
// process that serves without Temporal while it is down (the query API
// asks it only for a scheduler's progress).
func DialLazy(cfg config.Temporal, logger *zap.Logger) (client.Client, error) {
	c, err := client.NewLazyClient(client.Options{
		HostPort:  cfg.HostPort,
		Namespace: cfg.Namespace,
		Logger:    NewLogger(logger),
	})
	if err != nil {
		return nil, fmt.Errorf("temporal.host_port %s: %w", cfg.HostPort, err)
	}
	return c, nil
}
