package main

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tideline-dev/tideline/pkg/config"
)

// One line per event: no goroutine stack on a warning or an error unless
// log.level is debug, in either format; a panic always has one.
func TestLogLinesCarryNoStackBelowDebug(t *testing.T) {
	for _, tc := range []struct {
		format, level string
		stackOnError  bool
	}{
		{"json", "info", false},
		{"console", "info", false},
		{"console", "warn", false},
		{"json", "debug", true},
		{"console", "debug", true},
	} {
		core, logs := observer.New(zapcore.DebugLevel)
		log, err := newLogger(config.Log{Format: tc.format, Level: tc.level},
			zap.WrapCore(func(zapcore.Core) zapcore.Core { return core }))
		if err != nil {
			t.Fatal(err)
		}
		log.Warn("a warning")
		log.Error("an error")
		func() {
			defer func() { _ = recover() }()
			log.DPanic("a development panic") // not a panic in production builds
		}()
		for _, e := range logs.TakeAll() {
			want := tc.stackOnError || e.Level >= zapcore.DPanicLevel
			if got := e.Stack != ""; got != want {
				t.Errorf("%s at %s: %q has a stack: %v, want %v", tc.format, tc.level, e.Message, got, want)
			}
		}
	}
}
