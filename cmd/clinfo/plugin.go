package main

import "github.com/clinfer/clinfer/clbackend/cl"

// This file is the seam between clinfo's OpenCL listing and clinfer's GPU
// plugin: it prints, under each OpenCL device, what the plugin reports for
// it, so a user can match "GPU.1" to a physical device and see why a device
// is or is not used. clinfo only lists OpenCL until pluginViewOf is set.

// pluginView is what clinfer's GPU plugin reports for one OpenCL device.
type pluginView struct {
	// Device is the name clinfer gives the device ("GPU.0"), or "" when
	// the plugin does not use it.
	Device string `json:"device"`
	// Properties holds plugin properties by their OpenVINO names
	// (FULL_DEVICE_NAME, OPTIMIZATION_CAPABILITIES, DEVICE_ARCHITECTURE, …).
	Properties map[string]string `json:"properties,omitempty"`
	// Error says why the plugin rejects the device, if it does.
	Error string `json:"error,omitempty"`
}

// pluginViewOf, when set, returns the plugin's view of device d, the
// ordinal-th device in clinfo's listing (platform by platform, each
// platform's devices in OpenCL order). It is set by an init function in a
// file that imports package clbackend; nil means no section is printed.
var pluginViewOf func(d *cl.Device, ordinal int) (*pluginView, error)

// viewOf calls pluginViewOf, turning a failure into a view carrying the error.
func viewOf(d *cl.Device, ordinal int) *pluginView {
	if pluginViewOf == nil {
		return nil
	}
	v, err := pluginViewOf(d, ordinal)
	if err != nil {
		if v == nil {
			v = &pluginView{}
		}
		v.Error = err.Error()
	}
	return v
}
