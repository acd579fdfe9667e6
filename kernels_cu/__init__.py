"""CUDA C++ sources of the shipped kernels, installed as package data (``pyplugins.kernels_cu``)."""
