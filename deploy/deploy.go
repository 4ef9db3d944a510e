// Package deploy holds what runs beside the binary in a deployment: the
// compose file's configuration, Prometheus alert rules and the Grafana
// dashboard. The alert rules are compiled in so that `indexer dev` loads
// the very rules that promtool checks (deploy/prometheus_test.go).
package deploy

import _ "embed"

// AlertRules is deploy/prometheus/alerts.yml.
//
//go:embed prometheus/alerts.yml
var AlertRules []byte
