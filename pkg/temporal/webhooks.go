package temporal

// The names of the webhook deliveries (a side job:
// pkg/indexer/jobs/webhook, which holds their signal, query and memo
// names, options and start calls): one WebhookDelivery workflow per
// subscription to a chain's change stream.

// WebhookWorkflow is the delivery's workflow type.
const WebhookWorkflow = "WebhookDelivery"

// WebhookID is the workflow ID of a subscription's delivery.
func WebhookID(chainID, subscriptionID string) string {
	return chainID + ":webhook:" + subscriptionID
}
