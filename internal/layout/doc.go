// Package layout holds no code: its test checks the import rules between
// tideline's packages (see docs/architecture.md, "Package map").
package layout
