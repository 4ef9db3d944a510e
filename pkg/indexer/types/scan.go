package types

// HeadScanInput is the input of one HeadScan run (the Schedule's argument).
// It carries the chain ID only: settings come from the worker's config and
// secrets never enter workflow histories.
type HeadScanInput struct {
	ChainID string `json:"chain_id"`
}

// HeadScanResult says what one HeadScan run saw and did.
type HeadScanResult struct {
	Head         uint64 `json:"head"`
	Watermark    uint64 `json:"watermark"`
	HasWatermark bool   `json:"has_watermark"`
	Pending      uint64 `json:"pending"` // heights above the watermark, up to head
	Mode         string `json:"mode"`    // normal or catchup
	Started      int    `json:"started"` // IndexBlockWorkflows started directly
	// SchedulerStarted is true when this run started the SchedulerWorkflow.
	SchedulerStarted bool `json:"scheduler_started"`
	// LeftToPush counts missing heights not started because the push
	// source is expected to start them (see PushStatus).
	LeftToPush int `json:"left_to_push,omitempty"`
}

// PushStatus is what HeadScan reads of the chain's push source in the
// worker process (through a local activity, so it is in the history).
type PushStatus struct {
	// Enabled is false when the chain has no push source here.
	Enabled bool `json:"enabled"`
	// Healthy: subscribed, and a head delivered within stall_after.
	Healthy bool `json:"healthy"`
	// Latest is the highest height push has delivered: started its
	// IndexBlockWorkflow, found it started, or failed to start it (pull
	// then takes it).
	Latest uint64 `json:"latest"`
	// LagThreshold is push.lag_threshold: heights in (Latest, Latest +
	// LagThreshold] are left to push while it is healthy.
	LagThreshold uint64 `json:"lag_threshold"`
}

// HeadScan modes.
const (
	ModeNormal  = "normal"
	ModeCatchup = "catchup"
)

// GapScanInput is the input of one GapScan run (the Schedule's argument).
type GapScanInput struct {
	ChainID string `json:"chain_id"`
}

// GapScanResult says what one GapScan run found and did.
type GapScanResult struct {
	Head             uint64 `json:"head"`
	Missing          uint64 `json:"missing"`
	Started          int    `json:"started"`
	SchedulerStarted bool   `json:"scheduler_started"`
}
