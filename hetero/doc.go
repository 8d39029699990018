// Package hetero will hold the HETERO device: it asks each listed device's
// QueryModel, assigns affinities, cuts the graph into subgraphs and chains
// their requests. In the data flow of DESIGN.md it is a plugin.Plugin that
// wraps other plugins. Not yet implemented (issue 7).
package hetero
