package driver

// BatchStats are the counters of a compiled model that gathers concurrent
// inferences into batches (the BATCH device), like sql.DBStats: a server
// exports them as its batch-size metrics.
type BatchStats struct {
	// Size is the batch size (OPTIMAL_BATCH_SIZE): every batched
	// inference served this many requests.
	Size int
	// Batches is the number of batched inferences run.
	Batches int64
	// Alone is the number of inferences that ran on their own (batch 1 on
	// the model as given): a batch that did not fill in time, too few
	// requests to fill one, or inputs of another batch size.
	Alone int64
	// Gathering is the number of inferences waiting in the open batch now.
	Gathering int
}

// Batcher is implemented by a compiled model that gathers concurrent
// inferences into batches; plugin.CompiledModel.BatchStats asks for it.
type Batcher interface {
	BatchStats() BatchStats
}
