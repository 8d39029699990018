// Package tune is the search side of clinfer's device-adaptive kernels:
// the tuning modes, the order and budget in which the candidates of a
// kernel variant family are timed, and the per-device tuning cache, a
// readable JSON file of the choices tuning made.
//
// In the data flow of DESIGN.md it sits beside the GPU device's planner
// (package clbackend): for each distinct (kernel family, shape, options)
// of a launch plan the planner takes the choice recorded in the DB or,
// when GPU_TUNING_MODE asks for tuning, times the candidates Order
// returns on the device with the real shapes, checks each against the
// reference, keeps the fastest and records it here; every later compile on
// that device (DEVICE_ARCHITECTURE and driver) reads it back without a
// tuning property. cmd/tune then confirms each recorded choice in the
// model with the rule of Judge and JudgeAll (interleaved rounds of the
// heuristics and the tuned compile, a sign test over the rounds); a
// record that does not beat the heuristics there keeps them
// (Record.KeepsHeuristic), and the GPU device runs its heuristics' choice
// for it. The variant tables themselves are data of package kernels. The
// package does no OpenCL: the timing is the planner's.
package tune
