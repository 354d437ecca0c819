import Training
