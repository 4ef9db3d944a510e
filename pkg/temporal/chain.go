package temporal

// Names of a chain's scheduler controls (`indexer chain pause|resume`).
const (
	// SchedulerPauseSignal pauses (true) or resumes (false) a chain's
	// SchedulerWorkflow: paused, it starts nothing new and waits.
	SchedulerPauseSignal = "pause"
	// SchedulerPausedQuery answers whether the scheduler is paused.
	SchedulerPausedQuery = "paused"
)
