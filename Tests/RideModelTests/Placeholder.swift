import RideModel
