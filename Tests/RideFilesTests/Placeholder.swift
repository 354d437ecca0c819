import RideFiles
