21841 bash 1
