package types

// IndexModeWebhook is the IndexMode search attribute of the webhook
// deliveries (they index nothing: they POST the change stream; the
// delivery is pkg/indexer/jobs/webhook).
const IndexModeWebhook IndexMode = "webhook"
