// RideFiles: FIT, GPX and TCX encoders (issue 8).
