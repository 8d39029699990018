// Package cliutil holds what clinfer's commands (cmd/infer, cmd/benchmark)
// share: repeatable KEY=VALUE flags, reading the model given with -m or the
// embedded default model, fixing dynamic input shapes from -shape flags, and
// seeded random input data, so both commands feed a model the same inputs
// for the same seed.
package cliutil
